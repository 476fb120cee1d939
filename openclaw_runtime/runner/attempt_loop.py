"""The inner failover level: the attempt loop for one model candidate (seed 001).

Each pass runs one attempt and then asks, in order: was the run aborted? did the idle-timeout
breaker trip? is this a context overflow (the recovery chain)? a timeout with a full prompt
(compaction)? a failure (thinking downgrade, profile rotation, same-model retries, hand-over
to the next model, or surface)? or a turn that needs a directed retry (reasoning only, empty,
compaction continuation, missing assistant)? Every retry kind has its own budget, and the
total is capped by the retry-iteration budget sized by the number of auth profiles; at that
cap the failover policy decides between the next model and the retry-limit payload.

The decisions themselves are pure functions elsewhere (``failover.policy``, ``recovery``,
``retry_instructions``, ``breaker``); this class wires them and says what it decided.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..auth import UnresolvedCredentialError, mark_embedded_run_auth_profile_success
from ..context import (
    is_mid_turn_precheck_error_message,
    session_likely_has_oversized_tool_results,
)
from ..failover import (
    AssistantDecisionInput,
    AttemptTerminal,
    FailoverDecision,
    FailoverReason,
    ModelCandidate,
    RetryLimitDecisionInput,
    is_context_overflow_error,
    merge_retry_failover_reason,
    resolve_run_failover_decision,
    signal_from_assistant_message,
)
from ..failover.events import redact_secret_text
from ..llm import Model, ThinkingLevel
from ..messages import AssistantMessage
from ..transcript import resolve_transcript_policy
from .attempt import AttemptFacts, AttemptOutcome, AttemptSpec, run_attempt
from .auth_controller import AuthController, AuthProfilesUnavailableError
from .breaker import (
    IdleTimeoutBreakerState,
    format_idle_timeout_breaker_message,
    has_completed_model_progress_for_idle_breaker,
    step_idle_timeout_breaker,
)
from .candidate import CandidateResult, RetryCounters, RunFailoverError
from .entry import (
    evaluate_context_window_guard,
    resolve_context_window_info,
    resolve_initial_thinking_level,
    resolve_output_token_cap,
)
from .error_kind import provider_error_kind, user_facing_reason
from .events import (
    AttemptDecision,
    AttemptEnd,
    AttemptStart,
    ContextWindowWarning,
    ProfileRotated,
    RetryScheduled,
)
from .recovery import (
    COMPACTION_FAILURE_USER_TEXT,
    CONTEXT_OVERFLOW_USER_TEXT,
    POST_COMPACTION_LOOP_REPEATS,
    OverflowRecoveryState,
    downgrade_thinking_level,
    is_thinking_level_rejection,
    parse_context_overflow_limit,
    resolve_overflow_recovery_step,
    should_compact_after_timeout,
)
from .request import RunErrorInfo
from .retry_instructions import (
    INCOMPLETE_TURN_SIDE_EFFECT_TEXT,
    attempt_had_potential_side_effects,
    resolve_compaction_continuation_retry_instruction,
    resolve_empty_response_retry_instruction,
    resolve_incomplete_turn_payload_text,
    resolve_reasoning_only_retry_instruction,
    should_retry_missing_assistant_turn,
    should_retry_silent_error_assistant_turn,
)
from .retry_instructions import AttemptFacts as RetryFacts
from .retry_limit import (
    DEFAULT_EMPTY_RESPONSE_RETRY_LIMIT,
    DEFAULT_REASONING_ONLY_RETRY_LIMIT,
    MAX_EMPTY_ERROR_RETRIES,
    MAX_MISSING_ASSISTANT_RETRIES,
    MAX_OVERFLOW_COMPACTION_ATTEMPTS,
    MAX_SAME_MODEL_IDLE_TIMEOUT_RETRIES,
    MAX_SAME_MODEL_RATE_LIMIT_RETRIES,
    RETRY_LIMIT_USER_TEXT,
    RunRetriesConfig,
    format_retry_limit_message,
    resolve_max_run_retry_iterations,
    resolve_same_model_rate_limit_retry_delay_ms,
)

if TYPE_CHECKING:
    from .run import _Run

__all__ = ["DEFAULT_RESERVE_TOKENS", "ModelAttemptLoop"]

#: Completion tokens kept free when routing a prompt (capped by the model's max tokens).
DEFAULT_RESERVE_TOKENS = 16_384

#: The loop goes round again.
RETRY = None


@dataclass(frozen=True, slots=True)
class _Failure:
    """How an attempt failed, as the policy functions need it."""

    error_text: str | None
    reason: FailoverReason | None
    overflow: bool
    status: int | None
    code: str | None


def _reason_text(reason: object) -> str | None:
    return None if reason is None else str(reason)


class ModelAttemptLoop:
    """Attempts against one model until it answers, gives up, or hands over."""

    def __init__(self, run: _Run, candidate: ModelCandidate) -> None:
        self.run = run
        self.model: Model = run.runtime.resolve_model(candidate.ref)
        self.counters = RetryCounters()
        self.breaker = IdleTimeoutBreakerState()
        self.last_reason: FailoverReason | None = None
        self.first_attempt_of_run = run.total_attempts == 0

    # setup ------------------------------------------------------------------------------------

    async def _setup(self) -> None:
        run, model = self.run, self.model
        runtime, request, config = run.runtime, run.request, run.config
        guard = evaluate_context_window_guard(
            resolve_context_window_info(
                model_context_window=model.context_window,
                agent_context_tokens=config.agent.context_tokens,
            )
        )
        if guard.should_block:
            raise RunFailoverError(
                f"Model context window too small ({guard.tokens} tokens).",
                reason=FailoverReason.UNKNOWN,
            )
        if guard.should_warn:
            await run.emit(
                ContextWindowWarning(model.provider, model.id, guard.tokens, guard.source)
            )
        self.window = guard.tokens
        learned = runtime.learned_context_windows.get(model.ref)
        if learned is not None and learned < self.window:
            self.window = learned  # a limit this model's provider stated in an earlier run
        self.max_tokens = resolve_output_token_cap(
            request.max_tokens, config.agent.max_tokens, model.max_tokens
        )
        self.reserve = max(
            1, min(DEFAULT_RESERVE_TOKENS, self.max_tokens or DEFAULT_RESERVE_TOKENS)
        )
        self.stream_fn = runtime.stream_fn_for(model)
        self.policy = resolve_transcript_policy(
            model.api,
            model.provider,
            model.id,
            model_reasoning=model.reasoning,
            allowed_tool_names=[tool.name for tool in request.tools],
        )
        self.sanitizers = runtime.transcript_sanitizers()
        self.auth = AuthController(
            store=run.services.auth_store,
            settings=config.auth,
            provider=model.provider,
            model_id=model.id,
            preferred=request.auth_profile,
            locked=request.auth_profile if request.lock_auth_profile else None,
            env=runtime.env,
            cooldown_policy=config.auth.cooldowns.policy(),
        )
        try:
            await self.auth.start()
        except AuthProfilesUnavailableError as exc:
            raise RunFailoverError(
                str(exc), reason=exc.reason or FailoverReason.RATE_LIMIT
            ) from None
        retries = config.agent.run_retries
        self.max_iterations = resolve_max_run_retry_iterations(
            self.auth.candidate_count,
            RunRetriesConfig(
                base=retries.base, per_profile=retries.per_profile, min=retries.min, max=retries.max
            ),
        )
        self.initial_thinking: ThinkingLevel = (
            run.thinking_level
            if model.ref == run.model.ref
            else resolve_initial_thinking_level(
                request.thinking_level,
                default=config.agent.thinking_level,
                model_reasoning=model.reasoning,
            )
        )
        self.thinking: ThinkingLevel = self.initial_thinking

    def result(self, status: str, **fields: Any) -> CandidateResult:
        """A result of this candidate with the profile in use."""
        return CandidateResult(
            status=status, model=self.model, auth_profile_id=self.auth.current, **fields
        )

    async def decide(self, attempt: int, action: str, reason: object, why: str) -> None:
        """Emit what the loop decided and why."""
        await self.run.emit(AttemptDecision(attempt, action, _reason_text(reason), why))

    # the loop ---------------------------------------------------------------------------------

    async def execute(self) -> CandidateResult:
        """Run attempts until this candidate ends (or raise ``RunFailoverError``)."""
        await self._setup()
        while True:
            counters = self.counters
            if counters.iterations >= self.max_iterations:
                message = format_retry_limit_message(counters.iterations, self.max_iterations)
                return await self._retry_limit(message, self.last_reason)
            counters.iterations += 1
            outcome = await self._attempt()
            if outcome is None:
                continue
            ended = await self._after(outcome)
            if ended is not RETRY:
                return ended

    async def _attempt(self) -> AttemptOutcome | None:
        run, model, auth = self.run, self.model, self.auth
        run.total_attempts += 1
        attempt_no = run.total_attempts
        names = list(self.counters.additions)
        additions = list(self.counters.additions.values())
        self.counters.additions = {}
        plan = await run.plan_input(self.first_attempt_of_run and attempt_no == 1, additions)
        try:
            api_key = await auth.api_key()
        except UnresolvedCredentialError as exc:
            # a profile whose secret cannot be read is as good as an invalid key
            await self.decide(attempt_no, "rotate_profile", "auth", redact_secret_text(str(exc)))
            if await auth.advance() is None:
                raise RunFailoverError(str(exc), reason=FailoverReason.AUTH) from None
            return None
        if api_key:
            run.api_keys[model.provider] = api_key
        await run.emit(
            AttemptStart(
                attempt=attempt_no,
                provider=model.provider,
                model=model.id,
                auth_profile_id=auth.current,
                thinking_level=self.thinking,
                mode=plan.mode,
                additions=names,
            )
        )
        request = run.request
        assert run.session is not None
        outcome = await run_attempt(
            AttemptSpec(
                attempt=attempt_no,
                session=run.session,
                session_id=run.session_id,
                session_key=run.session_key,
                model=model,
                stream_fn=self.stream_fn,
                api_key=api_key,
                thinking_level=self.thinking,
                system_prompt=run.system_prompt,
                tools=request.tools,
                plan=plan,
                context_window=self.window,
                reserve_tokens=self.reserve,
                engine=run.engine,
                policy=self.policy,
                sanitizers=self.sanitizers,
                validate_turns=run.validate_turns,
                on_sanitizer_error=run.sanitizer_fault,
                emit=run.emit,
                heartbeat=run.heartbeat,
                compact=functools.partial(run.compact_bool, window=self.window, model=model),
                truncate=functools.partial(run.truncate, self.window),
                run_signal=request.abort_signal,
                timeout_s=run.timeout_s,
                idle_timeout_s=run.idle_timeout_s,
                images=request.images if plan.mode == "prompt" and attempt_no == 1 else (),
                loop_guard=run.total_compactions > 0,
                max_tokens=self.max_tokens,
                enforce_final_tag=run.config.agent.reply.enforce_final_tag,
            )
        )
        run.absorb(outcome)
        for usage in outcome.facts.usages:
            run.usage.add(usage)
        return outcome

    def _classify(self, outcome: AttemptOutcome) -> _Failure:
        assistant = outcome.assistant
        if not outcome.failed or assistant is None or outcome.externally_aborted:
            return _Failure(None, None, False, None, None)
        # our own attempt timer aborted the stream: say so, not "Request was aborted"
        error_text = outcome.timeout_message or assistant.error_message
        signal = signal_from_assistant_message(assistant)
        classification = self.run.classify(signal)
        reason: FailoverReason | None = None
        overflow = is_context_overflow_error(error_text) or is_mid_turn_precheck_error_message(
            error_text
        )
        if classification is not None:
            if classification.kind == "context_overflow":
                overflow = True
            else:
                reason = classification.reason
        if outcome.timed_out and reason is None:
            reason = FailoverReason.TIMEOUT
        return _Failure(error_text, reason, overflow, signal.status, signal.code)

    async def _after(self, outcome: AttemptOutcome) -> CandidateResult | None:
        run, model = self.run, self.model
        attempt_no = run.total_attempts
        assistant = outcome.assistant
        failure = self._classify(outcome)
        await run.emit(
            AttemptEnd(
                attempt=attempt_no,
                provider=model.provider,
                model=model.id,
                auth_profile_id=self.auth.current,
                stop_reason=assistant.stop_reason if assistant is not None else None,
                duration_ms=outcome.duration_ms,
                error=None
                if (failure.error_text or outcome.refused) is None
                else redact_secret_text(failure.error_text or outcome.refused or ""),
                failover_reason="context_overflow"
                if failure.overflow
                else _reason_text(failure.reason),
                status=failure.status,
                timed_out=outcome.timed_out,
                idle_timed_out=outcome.idle_timed_out,
                compactions=outcome.compactions,
            )
        )
        if outcome.externally_aborted:
            return self.result(
                "aborted",
                assistant=assistant,
                error=RunErrorInfo("aborted", "the run was aborted"),
                error_payload_text="⚠️ The run was aborted.",
            )
        if outcome.refused is not None:
            await self.decide(attempt_no, "surface_error", None, outcome.refused)
            return self.result(
                "error",
                error=RunErrorInfo("prompt_too_large", outcome.refused),
                error_payload_text=f"⚠️ {outcome.refused}",
            )
        facts = outcome.facts
        step = step_idle_timeout_breaker(
            self.breaker,
            idle_timed_out=outcome.idle_timed_out,
            completed_model_progress=has_completed_model_progress_for_idle_breaker(
                assistant_texts=facts.assistant_texts, tool_meta_count=len(facts.tool_metas)
            ),
            output_tokens=assistant.usage.output if assistant is not None else None,
        )
        self.breaker = step.state
        if step.tripped:
            return await self._retry_limit(
                format_idle_timeout_breaker_message(step.consecutive),
                self.last_reason or FailoverReason.TIMEOUT,
            )
        if outcome.loop_guard_tripped:
            await self.decide(
                attempt_no,
                "surface_error",
                None,
                "after compaction the model repeated the same tool calls "
                f"{POST_COMPACTION_LOOP_REPEATS} times in a row: stopping the attempt",
            )
            return self.result(
                "error",
                assistant=assistant,
                error=RunErrorInfo(
                    "post_compaction_loop", "the model looped on the same tool calls"
                ),
                error_payload_text=INCOMPLETE_TURN_SIDE_EFFECT_TEXT,
            )
        if failure.overflow:
            return await self._on_overflow(attempt_no, outcome, failure)
        compaction = await self._timeout_compaction(attempt_no, outcome)
        if compaction == "compacted":
            return RETRY
        if compaction == "timed_out":
            return self._compaction_timed_out(assistant)
        if outcome.failed:
            assert assistant is not None
            return await self._on_failure(attempt_no, outcome, assistant, failure)
        return await self._on_turn(attempt_no, outcome)

    # recovery chains --------------------------------------------------------------------------

    async def _on_overflow(
        self, attempt_no: int, outcome: AttemptOutcome, failure: _Failure
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

    # failures ---------------------------------------------------------------------------------

    async def _on_failure(
        self,
        attempt_no: int,
        outcome: AttemptOutcome,
        assistant: AssistantMessage,
        failure: _Failure,
    ) -> CandidateResult | None:
        run, counters = self.run, self.counters
        reason = failure.reason
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
            and should_retry_silent_error_assistant_turn(_retry_facts(outcome.facts))
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
            attempt_no, decision.action, decision.reason, "no recovery applies: surfacing the error"
        )
        kind = provider_error_kind(failure.error_text, timed_out=outcome.timed_out)
        return self.result(
            "timeout" if outcome.timed_out else "error",
            assistant=assistant,
            timed_out=outcome.timed_out,
            error=RunErrorInfo(
                kind,
                redact_secret_text(failure.error_text or "the model call failed"),
                user_facing_reason(kind, _reason_text(reason)),
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
            _reason_text(reason), provider_started=facts.provider_started, run_id=run.run_id
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
                reason=_reason_text(reason),
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
            error=RunErrorInfo("retry_limit", message, _reason_text(last_reason)),
            error_payload_text=RETRY_LIMIT_USER_TEXT,
            liveness_state="blocked",
        )

    # turns ------------------------------------------------------------------------------------

    async def _on_turn(self, attempt_no: int, outcome: AttemptOutcome) -> CandidateResult | None:
        """The attempt produced a turn: directed retries, else the candidate's success."""
        run, counters, model = self.run, self.counters, self.model
        facts = outcome.facts
        assistant = facts.assistant
        retry_facts = _retry_facts(facts)
        payload_count = len(run.success_payloads(self.result("ok", assistant=assistant)))
        instruction = resolve_reasoning_only_retry_instruction(retry_facts)
        if instruction and counters.reasoning_only < DEFAULT_REASONING_ONLY_RETRY_LIMIT:
            counters.reasoning_only += 1
            counters.additions["reasoning_only"] = instruction
            await run.emit(
                RetryScheduled(
                    attempt_no,
                    "reasoning_only",
                    counters.reasoning_only,
                    DEFAULT_REASONING_ONLY_RETRY_LIMIT,
                )
            )
            return RETRY
        if not instruction:
            empty = resolve_empty_response_retry_instruction(
                retry_facts, payload_count=payload_count, provider=model.provider
            )
            if empty and counters.empty_response < DEFAULT_EMPTY_RESPONSE_RETRY_LIMIT:
                counters.empty_response += 1
                counters.additions["empty_response"] = empty
                await run.emit(
                    RetryScheduled(
                        attempt_no,
                        "empty_response",
                        counters.empty_response,
                        DEFAULT_EMPTY_RESPONSE_RETRY_LIMIT,
                    )
                )
                return RETRY
        continuation = resolve_compaction_continuation_retry_instruction(
            retry_facts,
            attempt_compaction_count=outcome.compactions,
            payload_count=payload_count,
            attempts_so_far=counters.compaction_continuation,
        )
        if continuation:
            counters.compaction_continuation += 1
            counters.additions["compaction_continuation"] = continuation
            await run.emit(RetryScheduled(attempt_no, "compaction_continuation", 1, 1))
            return RETRY
        if (
            should_retry_missing_assistant_turn(retry_facts, payload_count=payload_count)
            and counters.missing_assistant < MAX_MISSING_ASSISTANT_RETRIES
        ):
            counters.missing_assistant += 1
            await run.emit(
                RetryScheduled(
                    attempt_no,
                    "missing_assistant",
                    counters.missing_assistant,
                    MAX_MISSING_ASSISTANT_RETRIES,
                )
            )
            return RETRY
        harness = None
        if payload_count == 0:
            if instruction:
                harness = "reasoning-only"
            elif assistant is None or not facts.assistant_texts:
                harness = "empty"
        self._record_success()
        await self.decide(attempt_no, "done", None, "the turn completed")
        return self.result(
            "ok",
            assistant=assistant,
            incomplete_text=resolve_incomplete_turn_payload_text(
                retry_facts, payload_count=payload_count
            ),
            harness_classification=harness,
        )

    def _record_success(self) -> None:
        """Fire and forget: the ledger learns the profile works, off the reply's path."""
        run, auth = self.run, self.auth
        if auth.current is None or run.task_group is None:
            return
        mark_embedded_run_auth_profile_success(
            run.task_group,
            auth.scoped or run.services.auth_store,
            auth.current,
            self.model.provider,
            run_id=run.run_id,
            session_id=run.session_id,
        )


def _terminal_of(outcome: AttemptOutcome, assistant: AssistantMessage) -> AttemptTerminal:
    if outcome.timed_out:
        return AttemptTerminal(
            kind="timeout",
            phase="tool_execution" if outcome.timed_out_during_tool_execution else "prompt",
            source="idle" if outcome.idle_timed_out else "runtime",
        )
    if assistant.stop_reason == "aborted":
        return AttemptTerminal(kind="aborted", source="runtime")
    return AttemptTerminal(kind="ok")


def _retry_facts(facts: AttemptFacts) -> RetryFacts:
    return RetryFacts(
        assistant_texts=facts.assistant_texts,
        assistant=facts.assistant,
        tool_metas=facts.tool_metas,
        last_tool_error=facts.last_tool_error,
        had_potential_side_effects=attempt_had_potential_side_effects(facts.tool_metas),
        items_started=len(facts.tool_metas),
        items_completed=len(facts.tool_metas),
    )
