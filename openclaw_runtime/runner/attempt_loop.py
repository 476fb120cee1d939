"""The inner failover level: the attempt loop for one model candidate (seed 001).

Each pass runs one attempt and then asks, in order: was the run aborted? did the idle-timeout
breaker trip? is this a context overflow (the recovery chain)? a timeout with a full prompt
(compaction)? a failure (thinking downgrade, profile rotation, same-model retries, hand-over
to the next model, or surface)? or a turn that needs a directed retry (reasoning only, empty,
compaction continuation, missing assistant)? Every retry kind has its own budget, and the
total is capped by the retry-iteration budget sized by the number of auth profiles; at that
cap the failover policy decides between the next model and the retry-limit payload.

The decisions themselves are pure functions elsewhere (``failover.policy``, ``recovery``,
``retry_instructions``, ``breaker``); this class wires them and says what it decided. Its
setup and state are ``attempt_loop_base.CandidateLoopBase``; the overflow and timeout recovery
chains (``attempt_recovery``) and the failure handling (``attempt_failures``) are mixins.
"""

from __future__ import annotations

from collections.abc import Awaitable

from ..auth import UnresolvedCredentialError, mark_embedded_run_auth_profile_success
from ..context import is_mid_turn_precheck_error_message
from ..failover import FailoverReason, is_context_overflow_error, signal_from_assistant_message
from ..failover.events import redact_secret_text
from .attempt import AttemptOutcome, AttemptSpec, run_attempt
from .attempt_failures import FailureRecovery
from .attempt_input import AttemptInputPlan
from .attempt_loop_base import RETRY, ClassifiedFailure, reason_text, to_retry_facts
from .attempt_recovery import RecoveryChains
from .breaker import (
    format_idle_timeout_breaker_message,
    has_completed_model_progress_for_idle_breaker,
    step_idle_timeout_breaker,
)
from .candidate import CandidateResult, RunFailoverError
from .events import AttemptEnd, AttemptStart, RetryScheduled
from .finalize import (
    BEFORE_AGENT_FINALIZE_ADDITION,
    MAX_BEFORE_AGENT_FINALIZE_REVISIONS,
    request_finalize_revision,
)
from .finalize_steer import STEERED_BEFORE_FINALIZE, steer_before_finalize
from .recovery import POST_COMPACTION_LOOP_REPEATS
from .request import RunErrorInfo
from .retry_instructions import (
    INCOMPLETE_TURN_SIDE_EFFECT_TEXT,
    resolve_compaction_continuation_retry_instruction,
    resolve_empty_response_retry_instruction,
    resolve_incomplete_turn_payload_text,
    resolve_reasoning_only_retry_instruction,
    should_retry_missing_assistant_turn,
)
from .retry_limit import (
    DEFAULT_EMPTY_RESPONSE_RETRY_LIMIT,
    DEFAULT_REASONING_ONLY_RETRY_LIMIT,
    MAX_MISSING_ASSISTANT_RETRIES,
    format_retry_limit_message,
)
from .run_result import success_payloads
from .timeout_phase import attempt_timeout_phase

__all__ = ["ModelAttemptLoop"]


class ModelAttemptLoop(RecoveryChains, FailureRecovery):
    """Attempts against one model until it answers, gives up, or hands over (setup and
    state in ``CandidateLoopBase``, recovery chains and failure handling in the mixins)."""

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
        revision = self.counters.additions.pop(BEFORE_AGENT_FINALIZE_ADDITION, None)
        additions = list(self.counters.additions.values())
        self.counters.additions = {}
        # a revision request follows the draft answer as a message of its own
        plan = (
            AttemptInputPlan(mode="prompt", prompt=revision)
            if revision is not None
            else await run.plan_input(self.first_attempt_of_run and attempt_no == 1, additions)
        )
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
        if run.wants(AttemptStart.type):
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
        live = run.live
        if live is not None:
            live.stopped, live.streaming = False, True
        try:
            outcome = await self._run_attempt(attempt_no, plan, api_key)
        finally:
            if live is not None:
                live.streaming = False
        run.absorb(outcome)
        for usage in outcome.facts.usages:
            run.usage.add(usage)
        return outcome

    def _run_attempt(
        self, attempt_no: int, plan: AttemptInputPlan, api_key: str | None
    ) -> Awaitable[AttemptOutcome]:
        """``run_attempt``'s coroutine for this attempt (awaited at once by ``_attempt``; not a
        coroutine of its own: one frame fewer held while the attempt waits)."""
        run, model, request, live = self.run, self.model, self.run.request, self.run.live
        assert run.session is not None
        return run_attempt(
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
                prompt=run.prompt,
                tools=self.tools,
                plan=plan,
                context_window=self.window,
                reserve_tokens=self.reserve,
                engine=run.engine,
                policy=self.policy,
                sanitizers=self.sanitizers,
                validate_turns=run.validate_turns,
                on_sanitizer_error=run.sanitizer_fault,
                run=run,  # the objects, not bound methods held per attempt (``AttemptRun``)
                recovery=self,
                run_signal=request.abort_signal,
                timeout_s=run.timeout_s,
                idle_timeout_s=run.idle_timeout_s,
                images=request.images if plan.mode == "prompt" and attempt_no == 1 else (),
                loop_guard=run.total_compactions > 0,
                max_tokens=self.max_tokens,
                enforce_final_tag=run.config.agent.reply.enforce_final_tag,
                coalesce_deltas=run.reply_observer.chunker is None,  # no block replies cut
                get_steering_messages=None if live is None else live.drain_steering,
                get_follow_up_messages=None if live is None else live.drain_follow_ups,
            )
        )

    async def attempt_compact(self, trigger: str, tokens: int | None) -> bool:
        """The attempt's ``compact``: the run's, at this candidate's window and model (the
        window changes only between attempts, never while one runs)."""
        return await self.run.compact_bool(trigger, tokens, window=self.window, model=self.model)

    async def attempt_truncate(self) -> int:
        """The attempt's ``truncate``: the run's, at this candidate's window."""
        return await self.run.truncate(self.window)

    def _classify(self, outcome: AttemptOutcome) -> ClassifiedFailure:
        assistant = outcome.assistant
        if not outcome.failed or assistant is None or outcome.externally_aborted:
            return ClassifiedFailure(None, None, False, None, None)
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
        return ClassifiedFailure(error_text, reason, overflow, signal.status, signal.code)

    async def _after(self, outcome: AttemptOutcome) -> CandidateResult | None:
        run, model = self.run, self.model
        attempt_no = run.total_attempts
        assistant = outcome.assistant
        failure = self._classify(outcome)
        if run.wants(AttemptEnd.type):
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
                    else reason_text(failure.reason),
                    status=failure.status,
                    timed_out=outcome.timed_out,
                    idle_timed_out=outcome.idle_timed_out,
                    compactions=outcome.compactions,
                    timeout_phase=attempt_timeout_phase(
                        timed_out_during_tool_execution=outcome.timed_out_during_tool_execution
                    )
                    if outcome.timed_out
                    else None,
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

    # turns ------------------------------------------------------------------------------------

    async def _on_turn(self, attempt_no: int, outcome: AttemptOutcome) -> CandidateResult | None:
        """The attempt produced a turn: directed retries, else the candidate's success."""
        run, counters, model = self.run, self.counters, self.model
        facts = outcome.facts
        assistant = facts.assistant
        retry_facts = to_retry_facts(facts)
        payload_count = len(success_payloads(run, self.result("ok", assistant=assistant)))
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
        steered = await steer_before_finalize(
            run, revisions_so_far=counters.before_agent_finalize, payload_count=payload_count
        )
        if steered:  # a waiting steer wins over finalization: the hook is not asked
            await run.emit(RetryScheduled(attempt_no, STEERED_BEFORE_FINALIZE, steered, 0))
            return RETRY
        revision = await request_finalize_revision(
            run,
            provider=model.provider,
            model=model.id,
            last_answer="\n".join(facts.assistant_texts),
            revisions_so_far=counters.before_agent_finalize,
            payload_count=payload_count,
        )
        if revision is not None:
            counters.before_agent_finalize += 1
            counters.additions[BEFORE_AGENT_FINALIZE_ADDITION] = revision
            await run.emit(
                RetryScheduled(
                    attempt_no,
                    BEFORE_AGENT_FINALIZE_ADDITION,
                    counters.before_agent_finalize,
                    MAX_BEFORE_AGENT_FINALIZE_REVISIONS,
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
            fallback_safe=not retry_facts.had_potential_side_effects,
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
