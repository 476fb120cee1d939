"""Failure handling of the attempt loop: what a failed attempt leads to.

In order: a thinking level the provider rejected is lowered; the failover policy
(``failover.resolve_run_failover_decision``) picks between rotating the auth profile, the next
model and surfacing the error; a rate limit is retried on the same model with backoff, an idle
timeout and a silent error each a bounded number of times. At the retry-iteration cap the
policy decides between the next model and the retry-limit payload (``_retry_limit``).
"""

from __future__ import annotations

from ..failover import (
    AssistantDecisionInput,
    AttemptTerminal,
    FailoverDecision,
    FailoverReason,
    RetryLimitDecisionInput,
    merge_retry_failover_reason,
    resolve_run_failover_decision,
)
from ..failover.events import redact_secret_text
from ..messages import AssistantMessage
from .attempt import AttemptFacts, AttemptOutcome
from .attempt_loop_base import (
    RETRY,
    CandidateLoopBase,
    ClassifiedFailure,
    reason_text,
    to_retry_facts,
)
from .candidate import CandidateResult, RunFailoverError
from .error_kind import provider_error_kind, user_facing_reason
from .events import ProfileRotated, RetryScheduled
from .recovery import downgrade_thinking_level, is_thinking_level_rejection
from .request import RunErrorInfo
from .retry_instructions import should_retry_silent_error_assistant_turn
from .retry_limit import (
    MAX_EMPTY_ERROR_RETRIES,
    MAX_SAME_MODEL_IDLE_TIMEOUT_RETRIES,
    MAX_SAME_MODEL_RATE_LIMIT_RETRIES,
    RETRY_LIMIT_USER_TEXT,
    resolve_same_model_rate_limit_retry_delay_ms,
)
from .thinking_recovery import (
    has_thinking_blocks,
    is_thinking_signature_rejection,
    strip_thinking_in_run_session,
)
from .timeout_phase import attempt_timeout_phase, timed_out_attempt_terminal

__all__ = ["FailureRecovery"]


class FailureRecovery(CandidateLoopBase):
    """The failure handling of ``ModelAttemptLoop``."""

    async def _on_failure(
        self,
        attempt_no: int,
        outcome: AttemptOutcome,
        assistant: AssistantMessage,
        failure: ClassifiedFailure,
    ) -> CandidateResult | None:
        run, counters = self.run, self.counters
        reason = failure.reason
        if (
            not counters.thinking_signature_retried
            and is_thinking_signature_rejection(failure.error_text)
            and run.session is not None
            and has_thinking_blocks(run.session.build_session_context().messages)
        ):
            counters.thinking_signature_retried = True
            await run.set_aside_failed_turn()
            stripped = await strip_thinking_in_run_session(run)
            if stripped:
                await self.decide(
                    attempt_no,
                    "strip_thinking",
                    reason,
                    f"the provider rejected a thinking signature; stripped the thinking of "
                    f"{stripped} message(s) from the session and retrying once",
                )
                return RETRY
        lower = downgrade_thinking_level(self.thinking)
        if lower is not None and is_thinking_level_rejection(failure.error_text):
            await run.set_aside_failed_turn()
            await self.decide(
                attempt_no,
                "downgrade_thinking",
                reason,
                f"the provider rejected thinking level {self.thinking!r}; retrying with {lower!r}",
            )
            self.thinking = lower
            return RETRY
        terminal = _terminal_of(outcome, assistant)
        self.last_reason = merge_retry_failover_reason(
            self.last_reason, reason, timed_out=outcome.timed_out
        )
        decision = self._decide(terminal, reason, profile_rotated=False)
        if decision.action == "rotate_profile":
            if await self._rotate(attempt_no, reason, outcome.facts):
                return RETRY
            decision = self._decide(terminal, reason, profile_rotated=True)
        if (
            reason == FailoverReason.RATE_LIMIT
            and decision.action != "fallback_model"
            and counters.same_model_rate_limit < MAX_SAME_MODEL_RATE_LIMIT_RETRIES
        ):
            await self._same_model_rate_limit_retry(attempt_no, assistant)
            return RETRY
        if decision.action == "fallback_model":
            await run.set_aside_failed_turn()
            await self.decide(
                attempt_no,
                "fallback_model",
                decision.reason,
                f"{self.model.ref} cannot recover ({decision.reason}); handing over to the "
                "next model",
            )
            raise RunFailoverError(
                failure.error_text or "model failed",
                reason=decision.reason,
                status=failure.status,
                code=failure.code,
                result=self.result("error", assistant=assistant),
            )
        if (
            outcome.idle_timed_out
            and counters.same_model_idle_timeout < MAX_SAME_MODEL_IDLE_TIMEOUT_RETRIES
        ):
            counters.same_model_idle_timeout += 1
            await run.set_aside_failed_turn()
            await run.emit(
                RetryScheduled(
                    attempt_no,
                    "idle_timeout",
                    counters.same_model_idle_timeout,
                    MAX_SAME_MODEL_IDLE_TIMEOUT_RETRIES,
                )
            )
            return RETRY
        if (
            reason is None
            and not outcome.timed_out
            and should_retry_silent_error_assistant_turn(to_retry_facts(outcome.facts))
            and counters.empty_error < MAX_EMPTY_ERROR_RETRIES
        ):
            counters.empty_error += 1
            await run.set_aside_failed_turn()
            await run.emit(
                RetryScheduled(
                    attempt_no, "silent_error", counters.empty_error, MAX_EMPTY_ERROR_RETRIES
                )
            )
            return RETRY
        await self.decide(
            attempt_no,
            decision.action,
            decision.reason,
            "a tool ran past the attempt's timeout; another profile or model would not make it "
            "faster: ending on the timeout"
            if outcome.timed_out_during_tool_execution and not outcome.idle_timed_out
            else "no recovery applies: surfacing the error",
        )
        kind = provider_error_kind(failure.error_text, timed_out=outcome.timed_out)
        return self.result(
            "timeout" if outcome.timed_out else "error",
            assistant=assistant,
            timed_out=outcome.timed_out,
            # an idle timeout is model silence: the run's outcome keeps the provider phase
            timeout_phase=attempt_timeout_phase(
                timed_out_during_tool_execution=outcome.timed_out_during_tool_execution
                and not outcome.idle_timed_out
            )
            if outcome.timed_out
            else None,
            error=RunErrorInfo(
                kind,
                redact_secret_text(failure.error_text or "the model call failed"),
                user_facing_reason(kind, reason_text(reason)),
            ),
        )

    def _decide(
        self, terminal: AttemptTerminal, reason: FailoverReason | None, *, profile_rotated: bool
    ) -> FailoverDecision:
        return resolve_run_failover_decision(
            AssistantDecisionInput(
                terminal=terminal,
                fallback_configured=self.run.fallback_configured,
                failover_failure=reason is not None,
                failover_reason=reason,
                profile_rotated=profile_rotated,
            )
        )

    async def _rotate(
        self, attempt_no: int, reason: FailoverReason | None, facts: AttemptFacts
    ) -> bool:
        """Record the failure per the recording policy and move to the next usable profile;
        a new profile starts from the initial thinking level."""
        run, auth = self.run, self.auth
        previous = auth.current
        recorded = await auth.record_failure(
            reason_text(reason), provider_started=facts.provider_started, run_id=run.run_id
        )
        following = await auth.advance()
        if following is None:
            return False
        self.thinking = self.initial_thinking
        await run.set_aside_failed_turn()
        await run.emit(
            ProfileRotated(
                provider=self.model.provider,
                from_profile=previous,
                to_profile=following,
                reason=reason_text(reason),
                recorded_reason=recorded,
            )
        )
        await self.decide(
            attempt_no,
            "rotate_profile",
            reason,
            f"{self.model.ref} failed ({reason or 'timeout'}) with profile {previous}; "
            f"retrying with {following}",
        )
        return True

    async def _same_model_rate_limit_retry(
        self, attempt_no: int, assistant: AssistantMessage
    ) -> None:
        run, counters = self.run, self.counters
        retry_after = assistant.error_retry_after_ms
        delay_ms = run.runtime.retry_backoff_scale * resolve_same_model_rate_limit_retry_delay_ms(
            counters.same_model_rate_limit,
            None if retry_after is None else float(retry_after) / 1000,
        )
        counters.same_model_rate_limit += 1
        await run.set_aside_failed_turn()
        await run.emit(
            RetryScheduled(
                attempt_no,
                "rate_limit",
                counters.same_model_rate_limit,
                MAX_SAME_MODEL_RATE_LIMIT_RETRIES,
                delay_ms,
            )
        )
        await run.sleep(delay_ms / 1000)

    async def _retry_limit(
        self, message: str, last_reason: FailoverReason | None
    ) -> CandidateResult:
        decision = resolve_run_failover_decision(
            RetryLimitDecisionInput(self.run.fallback_configured, last_reason)
        )
        await self.decide(self.run.total_attempts, decision.action, decision.reason, message)
        if decision.action == "fallback_model":
            await self.run.set_aside_failed_turn()
            raise RunFailoverError(message, reason=decision.reason)
        return self.result(
            "error",
            error=RunErrorInfo("retry_limit", message, reason_text(last_reason)),
            error_payload_text=RETRY_LIMIT_USER_TEXT,
            liveness_state="blocked",
        )

    # turns ------------------------------------------------------------------------------------


def _terminal_of(outcome: AttemptOutcome, assistant: AssistantMessage) -> AttemptTerminal:
    if outcome.timed_out:
        return timed_out_attempt_terminal(
            timed_out_during_tool_execution=outcome.timed_out_during_tool_execution,
            idle_timed_out=outcome.idle_timed_out,
        )
    if assistant.stop_reason == "aborted":
        return AttemptTerminal(kind="aborted", source="runtime")
    return AttemptTerminal(kind="ok")
