"""What the attempt loop of one model candidate hands back to the run.

Either a ``CandidateResult`` (the model finished: a turn, or an error to surface as a payload)
or a ``RunFailoverError`` (this model cannot recover; the outer loop may try the next one —
``run_with_model_fallback`` reads its ``reason``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._exceptions import ProviderError
from ..failover import FailoverReason
from ..failover.events import redact_secret_text
from ..llm import Model
from ..messages import AssistantMessage
from .reply_payload import ReplyPayload
from .request import RunErrorInfo
from .timeout_phase import AttemptTimeoutPhase

__all__ = ["CandidateResult", "RetryCounters", "RunFailoverError"]


@dataclass
class CandidateResult:
    """How one model candidate ended: ``status`` ok, error, timeout or aborted."""

    status: str
    model: Model
    auth_profile_id: str | None
    assistant: AssistantMessage | None = None
    error: RunErrorInfo | None = None
    error_payload_text: str | None = None
    incomplete_text: str | None = None
    harness_classification: str | None = None
    timed_out: bool = False
    #: where a timed-out attempt's timeout struck: ``prompt`` or ``tool_execution``
    timeout_phase: AttemptTimeoutPhase | None = None
    liveness_state: str | None = None
    #: an ``incomplete_text`` turn another model may redo: nothing with side effects ran
    fallback_safe: bool = False
    #: the reply payloads of an answered candidate, taken when it ended (the fallback chain
    #: may move on, and its exhaustion merge shows the most credible candidate's payloads)
    payloads: list[ReplyPayload] | None = None


class RunFailoverError(ProviderError):
    """The attempt loop gave up on this model: the outer loop may try the next one.

    Carries the failover ``reason`` (which ``run_with_model_fallback`` honours), the
    provider's status/code, and the candidate's partial result for the final payloads.
    """

    def __init__(
        self,
        message: str,
        *,
        reason: FailoverReason | str | None,
        status: int | None = None,
        code: str | None = None,
        result: CandidateResult | None = None,
    ) -> None:
        super().__init__(redact_secret_text(message))
        self.reason = None if reason is None else str(reason)
        self.status = status
        self.code = code
        self.result = result


@dataclass
class RetryCounters:
    """Per-kind retry budgets of one model candidate; exhausting one leaves the others."""

    iterations: int = 0
    thinking_signature_retried: bool = False
    overflow_compactions: int = 0
    timeout_compactions: int = 0
    retried_after_in_attempt_compaction: bool = False
    compaction_exhausted: bool = False
    last_compaction_failed: bool = False
    truncation_attempted: bool = False
    reasoning_only: int = 0
    empty_response: int = 0
    empty_error: int = 0
    missing_assistant: int = 0
    compaction_continuation: int = 0
    same_model_rate_limit: int = 0
    same_model_idle_timeout: int = 0
    before_agent_finalize: int = 0
    additions: dict[str, str] = field(default_factory=dict)
