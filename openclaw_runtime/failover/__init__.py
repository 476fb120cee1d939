"""Failure classification and failover decisions (OpenClaw's ``src/agents/failover``).

* ``patterns`` (tables, data only) / ``matchers`` / ``text`` / ``overflow`` — the wordings;
* ``classify`` — ``classify_failover_signal``: a failure's facts in, a reason out, over
  ``signals``, ``api_errors``, ``message_rules``, ``http_status`` and ``owners``;
* ``policy`` — ``resolve_run_failover_decision``: rotate, fall back, surface, continue;
* ``result_classifier`` — finished runs that amount to nothing;
* ``fallback`` — ``run_with_model_fallback``, the outer loop over the model chain.

This face re-exports the names the runner, plugins and docs use; the rest is imported from
its module.
"""

import typing as _typing

from .._lazy_face import lazy_getattr as _lazy_getattr

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from .classify import (  # noqa: I001 (packed: a face has at most 100 lines)
        ProviderFailoverOwner, classify_failover_reason, classify_failover_signal,
    )
    from .fallback import (
        ModelCandidate, ModelFallbackRunResult, ModelResultRejectedError, hook_classifier,
        resolve_model_candidate_chain, run_with_model_fallback,
    )
    from .overflow import (
        is_context_overflow, is_context_overflow_error, is_likely_context_overflow_error,
    )
    from .owners import ProviderFailoverContext
    from .policy import (
        AssistantDecisionInput, AttemptTerminal, FailoverDecision, PromptDecisionInput,
        RetryLimitDecisionInput, is_terminal_format_failure, merge_retry_failover_reason,
        resolve_model_fallback_decision, resolve_run_failover_decision, should_escalate_retry_limit,
        should_rotate_assistant, should_rotate_prompt,
    )
    from .reasons import FAILOVER_REASONS, FailoverClassification, FailoverReason, FailoverSignal
    from .result_classifier import (
        EmbeddedRunResult, ResultFallbackClassification, RunPayload,
        classify_embedded_agent_run_result_for_model_fallback,
        merge_embedded_agent_run_result_for_model_fallback_exhaustion,
    )
    from .signals import signal_from_assistant_message
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "classify": "ProviderFailoverOwner classify_failover_reason classify_failover_signal",
    "fallback": (
        "ModelCandidate ModelFallbackRunResult ModelResultRejectedError hook_classifier "
        "resolve_model_candidate_chain run_with_model_fallback"
    ),
    "overflow": "is_context_overflow is_context_overflow_error is_likely_context_overflow_error",
    "owners": "ProviderFailoverContext",
    "policy": (
        "AssistantDecisionInput AttemptTerminal FailoverDecision PromptDecisionInput "
        "RetryLimitDecisionInput is_terminal_format_failure merge_retry_failover_reason "
        "resolve_model_fallback_decision resolve_run_failover_decision "
        "should_escalate_retry_limit should_rotate_assistant should_rotate_prompt"
    ),
    "reasons": "FAILOVER_REASONS FailoverClassification FailoverReason FailoverSignal",
    "result_classifier": (
        "EmbeddedRunResult ResultFallbackClassification RunPayload "
        "classify_embedded_agent_run_result_for_model_fallback "
        "merge_embedded_agent_run_result_for_model_fallback_exhaustion"
    ),
    "signals": "signal_from_assistant_message",
}
__getattr__ = _lazy_getattr(__name__, _LAZY)


__all__ = [
    "FAILOVER_REASONS", "AssistantDecisionInput", "AttemptTerminal", "EmbeddedRunResult",
    "FailoverClassification", "FailoverDecision", "FailoverReason", "FailoverSignal",
    "ModelCandidate", "ModelFallbackRunResult", "ModelResultRejectedError", "PromptDecisionInput",
    "ProviderFailoverContext", "ProviderFailoverOwner", "ResultFallbackClassification",
    "RetryLimitDecisionInput", "RunPayload",
    "classify_embedded_agent_run_result_for_model_fallback", "classify_failover_reason",
    "classify_failover_signal", "hook_classifier", "is_context_overflow",
    "is_context_overflow_error", "is_likely_context_overflow_error", "is_terminal_format_failure",
    "merge_embedded_agent_run_result_for_model_fallback_exhaustion", "merge_retry_failover_reason",
    "resolve_model_candidate_chain", "resolve_model_fallback_decision",
    "resolve_run_failover_decision", "run_with_model_fallback", "should_escalate_retry_limit",
    "should_rotate_assistant", "should_rotate_prompt", "signal_from_assistant_message",
]  # fmt: skip
