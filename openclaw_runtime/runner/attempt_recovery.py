"""The recovery chains of the attempt loop: context overflow and timeout compaction.

A context overflow walks the overflow chain (``recovery.resolve_overflow_recovery_step``):
retry once after an in-attempt compaction, compact the session (up to
``MAX_OVERFLOW_COMPACTION_ATTEMPTS``), truncate oversized tool results, lower the thinking
level (``thinking_pressure``, seed 004 strategy 3), else surface the overflow; a window the
provider states in its error replaces the catalog's from then on. A model timeout with the
prompt above 65 % of the window compacts before retrying. A compaction that uses up the run's
timeout ends the run on that timeout.
"""

from __future__ import annotations

import logging

from ..context import session_likely_has_oversized_tool_results
from ..failover.events import redact_secret_text
from ..messages import AssistantMessage
from ..redaction import package_logger
from .attempt import AttemptOutcome
from .attempt_loop_base import RETRY, CandidateLoopBase, ClassifiedFailure
from .candidate import CandidateResult
from .recovery import (
    COMPACTION_FAILURE_USER_TEXT,
    CONTEXT_OVERFLOW_USER_TEXT,
    OverflowRecoveryState,
    parse_context_overflow_limit,
    resolve_overflow_recovery_step,
    should_compact_after_timeout,
)
from .request import RunErrorInfo
from .retry_limit import MAX_OVERFLOW_COMPACTION_ATTEMPTS
from .thinking_pressure import resolve_context_pressure_thinking_level

__all__ = ["RecoveryChains"]

logger = package_logger(logging.getLogger("openclaw_runtime.runner"))


class RecoveryChains(CandidateLoopBase):
    """The overflow and timeout recovery chains of ``ModelAttemptLoop``."""

    async def _on_overflow(
        self, attempt_no: int, outcome: AttemptOutcome, failure: ClassifiedFailure
    ) -> CandidateResult | None:
        stated = parse_context_overflow_limit(failure.error_text)
        if stated is not None and stated < self.window:
            await self.decide(
                attempt_no,
                "adjust_window",
                "context_overflow",
                f"the provider states a {stated}-token context limit (catalog: "
                f"{self.window}); planning with {stated} from now on",
            )
            self.window = stated
            self.reserve = min(self.reserve, max(1, stated // 4))
            self.run.runtime.learned_context_windows[self.model.ref] = stated
        step = await self._walk_overflow_chain(attempt_no, outcome)
        if step == "retry":
            return RETRY
        if step == "compaction_timed_out":
            return self._compaction_timed_out(outcome.assistant)
        failed_compaction = step == "surface_compaction_failure"
        kind = "compaction_failure" if failed_compaction else "context_overflow"
        return self.result(
            "error",
            assistant=outcome.assistant,
            error=RunErrorInfo(
                kind, redact_secret_text(failure.error_text or kind), "context_overflow"
            ),
            error_payload_text=COMPACTION_FAILURE_USER_TEXT
            if failed_compaction
            else CONTEXT_OVERFLOW_USER_TEXT,
        )

    async def _walk_overflow_chain(self, attempt_no: int, outcome: AttemptOutcome) -> str:
        """Take overflow steps until one says retry, or the chain is exhausted."""
        run, counters = self.run, self.counters
        session = run.session
        assert session is not None
        await run.set_aside_failed_turn()
        while True:
            messages = session.build_session_context().messages
            step = resolve_overflow_recovery_step(
                OverflowRecoveryState(
                    attempt_compactions=outcome.compactions,
                    retried_after_in_attempt_compaction=counters.retried_after_in_attempt_compaction,
                    overflow_compaction_attempts=counters.overflow_compactions,
                    compaction_exhausted=counters.compaction_exhausted,
                    last_compaction_failed=counters.last_compaction_failed,
                    truncation_attempted=counters.truncation_attempted,
                    has_oversized_tool_results=session_likely_has_oversized_tool_results(
                        messages, context_window_tokens=self.window
                    ),
                )
            )
            if step == "retry_without_compaction":
                counters.retried_after_in_attempt_compaction = True
                await self.decide(
                    attempt_no,
                    "retry",
                    "context_overflow",
                    "context overflow persisted after in-attempt compaction; retrying the "
                    "prompt without additional compaction",
                )
                return "retry"
            if step == "compact":
                counters.overflow_compactions += 1
                await self.decide(
                    attempt_no,
                    "compact",
                    "context_overflow",
                    f"context overflow: compacting the session ({counters.overflow_compactions}"
                    f"/{MAX_OVERFLOW_COMPACTION_ATTEMPTS}) before retrying",
                )
                result = await run.compact(
                    "overflow", outcome.prompt_tokens, window=self.window, model=self.model
                )
                if result.compacted:
                    counters.last_compaction_failed = False
                    return "retry"
                if run.compaction_timeout is not None:
                    return "compaction_timed_out"
                counters.compaction_exhausted = True
                counters.last_compaction_failed = not result.ok
                continue
            if step == "truncate_tool_results":
                counters.truncation_attempted = True
                await self.decide(
                    attempt_no,
                    "truncate",
                    "context_overflow",
                    "context overflow: truncating oversized tool results before retrying",
                )
                if await run.truncate(self.window) > 0:
                    return "retry"
                continue
            lower = resolve_context_pressure_thinking_level(self.thinking)
            if lower is not None:
                # strategy 3 (seed 004): reasoning takes room in the window; step it down
                await self.decide(
                    attempt_no,
                    "downgrade_thinking",
                    "context_overflow",
                    "context overflow: compaction and truncation could not make it fit; "
                    f"lowering the thinking level {self.thinking!r} -> {lower!r} and retrying",
                )
                logger.warning(
                    "run %s: context overflow on %s; thinking level %s -> %s",
                    run.run_id,
                    self.model.ref,
                    self.thinking,
                    lower,
                )
                self.thinking = lower
                return "retry"
            await self.decide(
                attempt_no,
                "surface_error",
                "context_overflow",
                "context overflow: compaction and truncation could not make it fit",
            )
            return step

    async def _timeout_compaction(self, attempt_no: int, outcome: AttemptOutcome) -> str:
        """A model timeout with the prompt above 65 % of the window: compact, then retry.
        ``skipped``, ``compacted``, ``failed``, or ``timed_out`` (the run's timeout ran out)."""
        if not should_compact_after_timeout(
            timed_out=outcome.timed_out,
            timed_out_during_tool_execution=outcome.timed_out_during_tool_execution,
            prompt_tokens=outcome.prompt_tokens,
            context_window_tokens=self.window,
            timeout_compaction_attempts=self.counters.timeout_compactions,
        ):
            return "skipped"
        self.counters.timeout_compactions += 1
        await self.run.set_aside_failed_turn()
        await self.decide(
            attempt_no,
            "compact",
            "timeout",
            "the model timed out with the prompt above 65% of the context window: compacting "
            "before retrying",
        )
        if await self.run.compact_bool(
            "timeout", outcome.prompt_tokens, window=self.window, model=self.model
        ):
            return "compacted"
        return "timed_out" if self.run.compaction_timeout is not None else "failed"

    def _compaction_timed_out(self, assistant: AssistantMessage | None) -> CandidateResult:
        """A compaction used up the run's timeout: the run ends on that timeout."""
        why = self.run.compaction_timeout or "compaction timed out"
        return self.result(
            "timeout",
            assistant=assistant,
            timed_out=True,
            error=RunErrorInfo(
                "timeout",
                f"{why}: the run's timeout ran out while compacting the conversation",
                "timeout",
            ),
            error_payload_text=f"⚠️ The run timed out while compacting the conversation ({why}).",
        )
