"""Failure classification and failover decisions (OpenClaw's ``src/agents/failover``).

* ``patterns`` / ``overflow`` — the pattern tables of the classifier, as data;
* ``classify`` — ``classify_failover_signal``: a failure's facts in, a reason out;
* ``policy`` — ``resolve_run_failover_decision``: rotate, fall back, surface, continue;
* ``result_classifier`` — finished runs that amount to nothing;
* ``fallback`` — ``run_with_model_fallback``, the outer loop over the model chain.
"""

from __future__ import annotations

from .api_errors import extract_leading_http_status
from .classify import (
    ProviderFailoverOwner,
    classify_failover_reason,
    classify_failover_signal,
    is_failover_error_message,
)
from .events import (
    FallbackAttemptStart,
    FallbackCandidateSkipped,
    FallbackDecisionMade,
    FallbackExhausted,
    FallbackSucceeded,
)
from .fallback import (
    FallbackAttempt,
    ModelCandidate,
    ModelFallbackRunResult,
    ModelResultRejectedError,
    hook_classifier,
    resolve_model_candidate_chain,
    run_with_model_fallback,
)
from .http_status import classify_failover_classification_from_http_status
from .matchers import (
    is_auth_error_message,
    is_auth_permanent_error_message,
    is_billing_error_message,
    is_format_error_message,
    is_overloaded_error_message,
    is_pre_dispatch_tool_call_rejection_message,
    is_rate_limit_error_message,
    is_server_error_message,
    is_timeout_error_message,
)
from .overflow import (
    is_context_overflow,
    is_context_overflow_error,
    is_likely_context_overflow_error,
    is_provider_request_size_ceiling_error,
)
from .owners import ProviderFailoverContext
from .policy import (
    AssistantDecisionInput,
    AttemptTerminal,
    FailoverDecision,
    PromptDecisionInput,
    RetryLimitDecisionInput,
    is_terminal_format_failure,
    merge_retry_failover_reason,
    resolve_model_fallback_decision,
    resolve_run_failover_decision,
    should_escalate_retry_limit,
    should_rotate_assistant,
    should_rotate_prompt,
)
from .reasons import FAILOVER_REASONS, FailoverClassification, FailoverReason, FailoverSignal
from .result_classifier import (
    EmbeddedRunResult,
    ResultFallbackClassification,
    RunPayload,
    classify_embedded_agent_run_result_for_model_fallback,
    merge_embedded_agent_run_result_for_model_fallback_exhaustion,
)
from .signals import signal_from_assistant_message

__all__ = [
    "FAILOVER_REASONS",
    "AssistantDecisionInput",
    "AttemptTerminal",
    "EmbeddedRunResult",
    "FailoverClassification",
    "FailoverDecision",
    "FailoverReason",
    "FailoverSignal",
    "FallbackAttempt",
    "FallbackAttemptStart",
    "FallbackCandidateSkipped",
    "FallbackDecisionMade",
    "FallbackExhausted",
    "FallbackSucceeded",
    "ModelCandidate",
    "ModelFallbackRunResult",
    "ModelResultRejectedError",
    "PromptDecisionInput",
    "ProviderFailoverContext",
    "ProviderFailoverOwner",
    "ResultFallbackClassification",
    "RetryLimitDecisionInput",
    "RunPayload",
    "classify_embedded_agent_run_result_for_model_fallback",
    "classify_failover_classification_from_http_status",
    "classify_failover_reason",
    "classify_failover_signal",
    "extract_leading_http_status",
    "hook_classifier",
    "is_auth_error_message",
    "is_auth_permanent_error_message",
    "is_billing_error_message",
    "is_context_overflow",
    "is_context_overflow_error",
    "is_failover_error_message",
    "is_format_error_message",
    "is_likely_context_overflow_error",
    "is_overloaded_error_message",
    "is_pre_dispatch_tool_call_rejection_message",
    "is_provider_request_size_ceiling_error",
    "is_rate_limit_error_message",
    "is_server_error_message",
    "is_terminal_format_failure",
    "is_timeout_error_message",
    "merge_embedded_agent_run_result_for_model_fallback_exhaustion",
    "merge_retry_failover_reason",
    "resolve_model_candidate_chain",
    "resolve_model_fallback_decision",
    "resolve_run_failover_decision",
    "run_with_model_fallback",
    "should_escalate_retry_limit",
    "should_rotate_assistant",
    "should_rotate_prompt",
    "signal_from_assistant_message",
]
