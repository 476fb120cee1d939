"""``run_embedded_agent``: one complete agent turn that saves itself (seed 000 §4, seed 001).

The wiring, in order:

1. **entry** — session id/key resolved through the index (the key backfilled at once), the
   model chain resolved (request → alias → agent default → built-in), the thinking level, and
   the ``before_agent_run`` gate;
2. **lanes** — the session lane (one turn per session), then the global lane (the concurrency
   cap), both by trigger priority, each held for at most the attempt timeout plus 30 s, pushed
   out by every event of progress;
3. **model fallback** (outer) — ``run_with_model_fallback`` over the chain, classifying
   failures through the plugins' ``classify_failover``;
4. **attempt loop** (inner, per model) — auth-profile rotation, per-kind retry budgets, the
   idle-timeout breaker, the overflow and timeout recovery chains, directed retries;
5. **outcome** — one terminal outcome, reply payloads, usage over every attempt.

Policy lives in the pure modules next to this one (``entry``, ``attempt_input``,
``recovery``, ``retry_*``, ``outcome``, ``payloads``, the failover policy); this module only
wires them and emits what it decided.
"""

from __future__ import annotations

import functools
import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio

from .._exceptions import (
    ConfigurationError,
    FailoverExhaustedError,
    OpenClawRuntimeError,
    ProviderError,
)
from ..auth import UnresolvedCredentialError, mark_embedded_run_auth_profile_success
from ..context import is_mid_turn_precheck_error_message
from ..context.compaction import SummaryModel
from ..context.engine import CompactResult
from ..events import Event
from ..failover import (
    AssistantDecisionInput,
    AttemptTerminal,
    EmbeddedRunResult,
    FailoverReason,
    ModelCandidate,
    RetryLimitDecisionInput,
    RunPayload,
    classify_embedded_agent_run_result_for_model_fallback,
    hook_classifier,
    is_context_overflow_error,
    merge_retry_failover_reason,
    resolve_model_candidate_chain,
    resolve_run_failover_decision,
    run_with_model_fallback,
    signal_from_assistant_message,
)
from ..failover.events import redact_secret_text
from ..llm import Model, ThinkingLevel
from ..messages import AssistantMessage
from ..transcript import resolve_transcript_policy, validate_session_id
from ..transcript.store import SessionManager
from .attempt import AttemptOutcome, AttemptSpec, collect_attempt_facts, run_attempt
from .attempt_input import plan_attempt_input
from .auth_controller import AuthController, AuthProfilesUnavailableError
from .breaker import (
    IdleTimeoutBreakerState,
    format_idle_timeout_breaker_message,
    has_completed_model_progress_for_idle_breaker,
    step_idle_timeout_breaker,
)
from .entry import (
    evaluate_context_window_guard,
    resolve_context_window_info,
    resolve_initial_run_model_ref,
    resolve_initial_thinking_level,
)
from .events import (
    AttemptDecision,
    AttemptEnd,
    AttemptStart,
    CompactionEnd,
    CompactionStart,
    ContextWindowWarning,
    LaneAcquired,
    LaneWait,
    ProfileRotated,
    RetryScheduled,
    RunEnd,
    RunStart,
    ToolResultsTruncated,
)
from .failure_signal import resolve_embedded_run_failure_signal
from .lane_policy import (
    resolve_embedded_run_lane_timeout_ms,
    resolve_embedded_run_session_queue_priority,
    resolve_global_lane,
    resolve_session_lane,
)
from .lanes import LaneTimeoutError
from .outcome import (
    AgentRunTerminalOutcome,
    build_agent_run_terminal_outcome,
    resolve_run_liveness_state,
)
from .payloads import ReplyPayload, UsageAccumulator, build_embedded_run_payloads
from .recovery import (
    COMPACTION_FAILURE_USER_TEXT,
    CONTEXT_OVERFLOW_USER_TEXT,
    OverflowRecoveryState,
    downgrade_thinking_level,
    is_thinking_level_rejection,
    parse_context_overflow_limit,
    resolve_overflow_recovery_step,
    should_compact_after_timeout,
)
from .request import RunErrorInfo, RunRequest, RunResult
from .retry_instructions import (
    AttemptFacts as RetryFacts,
)
from .retry_instructions import (
    attempt_had_potential_side_effects,
    resolve_compaction_continuation_retry_instruction,
    resolve_empty_response_retry_instruction,
    resolve_incomplete_turn_payload_text,
    resolve_reasoning_only_retry_instruction,
    should_retry_missing_assistant_turn,
    should_retry_silent_error_assistant_turn,
)
from .retry_limit import (
    DEFAULT_EMPTY_RESPONSE_RETRY_LIMIT,
    DEFAULT_REASONING_ONLY_RETRY_LIMIT,
    MAX_EMPTY_ERROR_RETRIES,
    MAX_MISSING_ASSISTANT_RETRIES,
    MAX_SAME_MODEL_IDLE_TIMEOUT_RETRIES,
    MAX_SAME_MODEL_RATE_LIMIT_RETRIES,
    RETRY_LIMIT_USER_TEXT,
    RunRetriesConfig,
    format_retry_limit_message,
    resolve_max_run_retry_iterations,
    resolve_same_model_rate_limit_retry_delay_ms,
)

if TYPE_CHECKING:
    from .._runtime import Runtime

__all__ = ["RunEventCallback", "RunFailoverError", "run_embedded_agent"]

logger = logging.getLogger("openclaw_runtime.runner")

RunEventCallback = Callable[[Event], Awaitable[None] | None]

#: Completion tokens kept free when routing a prompt (capped by the model's max tokens).
DEFAULT_RESERVE_TOKENS = 16_384


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
        result: _CandidateResult | None = None,
    ) -> None:
        super().__init__(redact_secret_text(message))
        self.reason = None if reason is None else str(reason)
        self.status = status
        self.code = code
        self.result = result


@dataclass
class _CandidateResult:
    """What one model candidate ended with."""

    status: str  # "ok" | "error" | "timeout" | "aborted"
    model: Model
    auth_profile_id: str | None
    assistant: AssistantMessage | None = None
    error: RunErrorInfo | None = None
    error_payload_text: str | None = None
    incomplete_text: str | None = None
    harness_classification: str | None = None
    timed_out: bool = False
    liveness_state: str | None = None


@dataclass
class _Counters:
    """Per-kind retry budgets of one model candidate; none consumes another."""

    iterations: int = 0
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
    additions: dict[str, str] = field(default_factory=dict)


async def run_embedded_agent(
    runtime: Runtime, request: RunRequest, *, on_event: RunEventCallback | None = None
) -> RunResult:
    """Run one agent turn for ``request``; see the module docstring. Provider failures end
    as an error outcome with an error payload, never as an exception; bad input (an unknown
    model, an invalid session id) raises ``ConfigurationError``/``ValueError`` up front."""
    run = _Run(runtime, request, on_event)
    return await run.execute()


class _Run:
    """State of one run; the methods are its phases."""

    def __init__(
        self, runtime: Runtime, request: RunRequest, on_event: RunEventCallback | None
    ) -> None:
        self.runtime = runtime
        self.request = request
        self.config = runtime.config
        self.on_event = on_event
        self.hooks = runtime.hooks
        self.run_id = request.run_id or uuid.uuid4().hex
        self.started_at = time.time() * 1000
        self.perf_start = time.perf_counter()
        self.usage = UsageAccumulator()
        self.total_attempts = 0
        self.total_compactions = 0
        self.session: SessionManager | None = None
        self.engine: Any = None
        self.heartbeats: list[Callable[[], None]] = []
        self.run_entry_ids: set[str] = set()
        self.prompt_entry_id: str | None = None
        self.prompt_message: Any = None
        self.classify = hook_classifier(self.hooks)
        self.observes = self.hooks.observes_events
        self.task_group: anyio.abc.TaskGroup | None = None
        self.fallback_configured = False
        self.api_keys: dict[str, str] = {}
        self._emit_faults = 0

    # events -------------------------------------------------------------------------------

    async def emit(self, event: Event) -> None:
        """To the caller's callback and the plugins' ``on_agent_event``; an observer that
        raises is logged and ignored (it must not change the run)."""
        callback = self.on_event
        if callback is not None:
            try:
                result = callback(event)
                if result is not None:
                    await result
            except Exception:
                self._emit_faults += 1
                if self._emit_faults <= 3:
                    logger.warning("run event callback raised on %s", event.type, exc_info=True)
        if self.observes:
            self.hooks.on_agent_event(event, self.session_id)

    def heartbeat(self) -> None:
        for beat in self.heartbeats:
            beat()

    # entry --------------------------------------------------------------------------------

    def _resolve_entry(self) -> None:
        request, config = self.request, self.config
        index = self.runtime.session_index
        key = (request.session_key or "").strip() or None
        session_id = (request.session_id or "").strip() or None
        if session_id is None and key is not None:
            session_id = index.lookup_id(key)
        if session_id is None:
            session_id = uuid.uuid4().hex
        if key is None:
            key = index.lookup_key(session_id)
        self.session_id = validate_session_id(session_id)
        self.session_key = key

        aliases = {**self.runtime.models.aliases(), **config.agent.model_aliases}
        try:
            ref = resolve_initial_run_model_ref(
                provider=request.provider,
                model=request.model,
                aliases=aliases,
                agent_default=config.agent.model,
            )
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from exc
        self.model = self.runtime.resolve_model(ref)
        fallbacks = request.fallbacks if request.fallbacks is not None else config.agent.fallbacks
        resolved = []
        for entry in fallbacks:
            try:
                fallback = self.runtime.resolve_model(aliases.get(entry, entry))
            except OpenClawRuntimeError as exc:
                raise ConfigurationError(f"fallback model {entry!r}: {exc}") from exc
            resolved.append(ModelCandidate(fallback.provider, fallback.id))
        self.candidates = resolve_model_candidate_chain(
            ModelCandidate(self.model.provider, self.model.id), resolved
        )
        self.fallback_configured = len(self.candidates) > 1
        self.thinking_level: ThinkingLevel = resolve_initial_thinking_level(
            request.thinking_level,
            default=config.agent.thinking_level,
            model_reasoning=self.model.reasoning,
        )
        timeout = config.agent.timeout_seconds if request.timeout_s is None else request.timeout_s
        self.timeout_s: float | None = timeout if timeout and timeout > 0 else None
        self.idle_timeout_s = request.idle_timeout_s or config.agent.idle_timeout_seconds
        self.system_prompt = (
            config.agent.system_prompt if request.system_prompt is None else request.system_prompt
        )

    # the run ------------------------------------------------------------------------------

    async def execute(self) -> RunResult:
        self._resolve_entry()
        request = self.request
        await self.emit(
            RunStart(
                run_id=self.run_id,
                session_id=self.session_id,
                session_key=self.session_key,
                provider=self.model.provider,
                model=self.model.id,
                trigger=request.trigger,
                thinking_level=self.thinking_level,
            )
        )
        result: RunResult | None = None
        try:
            block, plugin = self.hooks.before_agent_run(
                session_id=self.session_id,
                session_key=self.session_key,
                prompt=request.prompt,
                provider=self.model.provider,
                model=self.model.id,
                trigger=request.trigger,
            )
            if block is not None:
                who = f" by plugin {plugin!r}" if plugin else ""
                result = self._final(
                    status="error",
                    error=RunErrorInfo("blocked", f"run blocked{who}: {block.reason}"),
                    stop_reason="hook_block",
                    payloads=[ReplyPayload(text=block.reason, is_error=True)],
                )
            else:
                result = await self._in_lanes()
        except LaneTimeoutError as exc:
            result = self._final(
                status="timeout",
                error=RunErrorInfo("lane_timeout", str(exc)),
                timeout_phase="provider",
                payloads=[ReplyPayload(text=f"⚠️ {exc}", is_error=True)],
            )
        finally:
            if result is None:
                # an exception escaped (a bug or bad input): still close the lifecycle
                with anyio.CancelScope(shield=True):
                    await self.emit(
                        RunEnd(
                            run_id=self.run_id,
                            outcome=build_agent_run_terminal_outcome(
                                "error", error="run raised"
                            ).to_dict(),
                            attempts=self.total_attempts,
                        )
                    )
        await self.emit(
            RunEnd(
                run_id=self.run_id,
                outcome=result.outcome.to_dict(),
                attempts=result.attempts,
                provider=result.provider,
                model=result.model,
                error=None if result.error is None else result.error.to_dict(),
            )
        )
        return result

    async def _in_lanes(self) -> RunResult:
        runtime, request = self.runtime, self.request
        priority = resolve_embedded_run_session_queue_priority(
            request.trigger, request.input_provenance
        )
        timeout_ms = 0 if self.timeout_s is None else self.timeout_s * 1000
        lane_timeout_s = resolve_embedded_run_lane_timeout_ms(timeout_ms) / 1000
        session_lane = resolve_session_lane(self.session_key or self.session_id)
        global_lane = resolve_global_lane(request.lane)
        lanes = runtime.lanes
        await runtime.wait_for_session_maintenance(self.session_id)
        await self.emit(LaneWait(session_lane, "session", priority))
        async with lanes.hold(
            session_lane, capacity=1, priority=priority, timeout_s=lane_timeout_s
        ) as session_lease:
            await self.emit(LaneAcquired(session_lane, "session", session_lease.waited_s * 1000))
            await self.emit(LaneWait(global_lane, "global", priority))
            async with lanes.hold(
                global_lane,
                capacity=self.config.agent.max_concurrent,
                priority=priority,
                timeout_s=lane_timeout_s,
            ) as global_lease:
                await self.emit(LaneAcquired(global_lane, "global", global_lease.waited_s * 1000))
                self.heartbeats = [session_lease.heartbeat, global_lease.heartbeat]
                try:
                    return await self._with_session()
                finally:
                    self.heartbeats = []

    async def _with_session(self) -> RunResult:
        runtime = self.runtime
        session = await runtime.session_store.open_or_create(self.session_id, cwd=os.getcwd())
        self.session = session
        try:
            if self.session_key:
                await runtime.session_index.bind(self.session_key, self.session_id)
            self.engine = await runtime.resolve_context_engine()
            async with anyio.create_task_group() as tg:
                self.task_group = tg
                result = await self._fallback_chain()
            return result
        finally:
            self.task_group = None
            with anyio.CancelScope(shield=True):
                await session.aclose()

    async def _fallback_chain(self) -> RunResult:
        try:
            chain = await run_with_model_fallback(
                self.candidates,
                self._run_candidate,
                classify=self.classify,
                classify_result=self._classify_result,
                emit=self.emit,
                fallback_configured=self.fallback_configured,
            )
        except RunFailoverError as exc:
            return self._from_failover_error(exc, exc)
        except FailoverExhaustedError as exc:
            last = exc.__cause__ if isinstance(exc.__cause__, RunFailoverError) else None
            return self._from_failover_error(exc, last)
        except ProviderError as exc:
            return self._from_failover_error(exc, None)
        return self._from_candidate(chain.result)

    # candidate results ------------------------------------------------------------------------

    def _classify_result(self, result: _CandidateResult, candidate: ModelCandidate) -> Any:
        if result.status != "ok":
            return None
        payloads = tuple(
            RunPayload(text=p.text, is_error=bool(p.is_error), is_reasoning=p.is_reasoning)
            for p in self._success_payloads(result)
        )
        view = EmbeddedRunResult(
            payloads=payloads,
            harness_classification=result.harness_classification,  # type: ignore[arg-type]
        )
        return classify_embedded_agent_run_result_for_model_fallback(
            candidate.provider, candidate.model, view
        )

    def _run_messages(self) -> list[Any]:
        """This run's messages still on the active branch (failed turns set aside excluded)."""
        session = self.session
        if session is None:
            return []
        wanted = self.run_entry_ids
        out = []
        for entry in session.get_branch():
            if entry.get("id") in wanted and entry.get("type") == "message":
                message = session._cached_message(entry)
                if message is not None:
                    out.append(message)
        return out

    def _success_payloads(self, result: _CandidateResult) -> list[ReplyPayload]:
        facts = collect_attempt_facts(self._run_messages())
        payloads = build_embedded_run_payloads(
            assistant_texts=list(facts.assistant_texts),
            tool_metas=list(facts.tool_metas),
            last_assistant=facts.assistant,
            current_assistant=result.assistant,
            last_tool_error=facts.last_tool_error,
            session_key=self.session_key or "",
            is_cron_trigger=self.request.trigger == "cron",
            thinking_level=self.thinking_level,
            messaging_tool_sent_texts=list(self.request.messaging_tool_sent_texts),
            current_message_id=self.request.current_message_id,
        )
        if not payloads and result.incomplete_text:
            payloads = [ReplyPayload(text=result.incomplete_text, is_error=True)]
        return payloads

    def _from_candidate(self, result: _CandidateResult) -> RunResult:
        if result.status == "ok":
            payloads = self._success_payloads(result)
            facts = collect_attempt_facts(self._run_messages())
            liveness = resolve_run_liveness_state(
                payload_count=len(payloads),
                aborted=False,
                timed_out=False,
                incomplete_turn_text=result.incomplete_text,
                last_assistant_stop_reason=result.assistant.stop_reason
                if result.assistant
                else None,
            )
            signal = resolve_embedded_run_failure_signal(
                self.request.trigger, facts.last_tool_error
            )
            return self._final(
                status="ok",
                payloads=payloads,
                stop_reason=result.assistant.stop_reason if result.assistant else None,
                liveness_state=liveness,
                provider_started=True,
                model=result.model,
                auth_profile_id=result.auth_profile_id,
                failure_signal=signal,
            )
        text = result.error_payload_text
        if text is None and result.assistant is not None:
            payloads = build_embedded_run_payloads(
                assistant_texts=[], current_assistant=result.assistant
            )
        else:
            payloads = [ReplyPayload(text=text or "The run failed.", is_error=True)]
        status = "timeout" if result.status == "timeout" else "error"
        return self._final(
            status=status,
            error=result.error,
            payloads=payloads,
            stop_reason="aborted" if result.status == "aborted" else None,
            liveness_state=result.liveness_state
            or ("blocked" if result.status != "aborted" else None),
            timeout_phase="provider" if status == "timeout" else None,
            provider_started=result.timed_out or None,
            model=result.model,
            auth_profile_id=result.auth_profile_id,
        )

    def _from_failover_error(
        self, exc: BaseException, source: RunFailoverError | None
    ) -> RunResult:
        reason = getattr(exc, "reason", None) if source is None else source.reason
        message = redact_secret_text(str(exc))
        partial = source.result if source is not None else None
        payloads: list[ReplyPayload]
        if (
            partial is not None
            and partial.assistant is not None
            and partial.error_payload_text is None
        ):
            payloads = build_embedded_run_payloads(
                assistant_texts=[], current_assistant=partial.assistant
            )
        else:
            text = partial.error_payload_text if partial is not None else None
            payloads = [ReplyPayload(text=text or f"⚠️ {message}", is_error=True)]
        kind = "failover" if isinstance(exc, FailoverExhaustedError) else "provider"
        if partial is not None and partial.error is not None:
            kind = partial.error.kind
        return self._final(
            status="error",
            error=RunErrorInfo(kind, message, None if reason is None else str(reason)),
            payloads=payloads,
            liveness_state="blocked",
            model=partial.model if partial is not None else None,
            auth_profile_id=partial.auth_profile_id if partial is not None else None,
        )

    def _final(
        self,
        *,
        status: str,
        payloads: list[ReplyPayload],
        error: RunErrorInfo | None = None,
        stop_reason: str | None = None,
        liveness_state: str | None = None,
        timeout_phase: str | None = None,
        provider_started: bool | None = None,
        model: Model | None = None,
        auth_profile_id: str | None = None,
        failure_signal: Any = None,
    ) -> RunResult:
        ended = time.time() * 1000
        outcome: AgentRunTerminalOutcome = build_agent_run_terminal_outcome(
            status,  # type: ignore[arg-type]
            error=None if error is None else error.message,
            stop_reason=stop_reason,
            liveness_state=liveness_state,
            timeout_phase=timeout_phase,
            provider_started=provider_started,
            started_at=self.started_at,
            ended_at=ended,
        )
        session = self.session
        return RunResult(
            run_id=self.run_id,
            session_id=self.session_id,
            session_key=self.session_key,
            session_file=None if session is None else str(session.path),
            outcome=outcome,
            payloads=payloads,
            usage=self.usage.to_usage(),
            provider=None if model is None else model.provider,
            model=None if model is None else model.id,
            auth_profile_id=auth_profile_id,
            attempts=self.total_attempts,
            compactions=self.total_compactions,
            messages=self._run_messages(),
            error=error,
            failure_signal=failure_signal,
            liveness_state=outcome.liveness_state,
            duration_ms=(time.perf_counter() - self.perf_start) * 1000,
        )

    # the attempt loop ---------------------------------------------------------------------

    async def _run_candidate(self, candidate: ModelCandidate) -> _CandidateResult:
        runtime, request, config = self.runtime, self.request, self.config
        model = runtime.resolve_model(candidate.ref)
        info = resolve_context_window_info(
            model_context_window=model.context_window,
            agent_context_tokens=config.agent.context_tokens,
        )
        guard = evaluate_context_window_guard(info)
        if guard.should_block:
            raise RunFailoverError(
                f"Model context window too small ({guard.tokens} tokens).",
                reason=FailoverReason.UNKNOWN,
            )
        if guard.should_warn:
            await self.emit(
                ContextWindowWarning(model.provider, model.id, guard.tokens, guard.source)
            )
        window = guard.tokens
        reserve = max(1, min(DEFAULT_RESERVE_TOKENS, model.max_tokens or DEFAULT_RESERVE_TOKENS))
        stream_fn = runtime.stream_fn_for(model)
        policy = resolve_transcript_policy(
            model.api,
            model.provider,
            model.id,
            model_reasoning=model.reasoning,
            allowed_tool_names=[tool.name for tool in request.tools],
        )
        auth = AuthController(
            store=runtime.auth_store,
            settings=config.auth,
            provider=model.provider,
            model_id=model.id,
            preferred=request.auth_profile,
            locked=request.auth_profile if request.lock_auth_profile else None,
            env=runtime.env,
            cooldown_policy=config.auth.cooldowns.policy(),
        )
        try:
            await auth.start()
        except AuthProfilesUnavailableError as exc:
            raise RunFailoverError(
                str(exc), reason=exc.reason or FailoverReason.RATE_LIMIT
            ) from None
        retries = config.agent.run_retries
        max_iterations = resolve_max_run_retry_iterations(
            auth.candidate_count,
            RunRetriesConfig(
                base=retries.base, per_profile=retries.per_profile, min=retries.min, max=retries.max
            ),
        )
        initial_thinking = (
            self.thinking_level
            if model.ref == self.model.ref
            else resolve_initial_thinking_level(
                request.thinking_level,
                default=config.agent.thinking_level,
                model_reasoning=model.reasoning,
            )
        )
        thinking: ThinkingLevel = initial_thinking
        counters = _Counters()
        breaker = IdleTimeoutBreakerState()
        last_reason: FailoverReason | None = None
        sanitizers = runtime.components.transcript_sanitizers.ordered()
        session = self.session
        assert session is not None
        first_attempt_of_run = self.total_attempts == 0

        def result(status: str, **kw: Any) -> _CandidateResult:
            return _CandidateResult(status=status, model=model, auth_profile_id=auth.current, **kw)

        while True:
            if counters.iterations >= max_iterations:
                message = format_retry_limit_message(counters.iterations, max_iterations)
                return await self._retry_limit(message, last_reason, result)
            counters.iterations += 1
            self.total_attempts += 1
            attempt_no = self.total_attempts

            addition_names = list(counters.additions)
            additions = list(counters.additions.values())
            counters.additions = {}
            plan = await self._plan_input(
                session, first_attempt_of_run and attempt_no == 1, additions
            )
            try:
                api_key = await auth.api_key()
            except UnresolvedCredentialError as exc:
                # a profile whose secret cannot be read is as good as an invalid key
                await self.emit(
                    AttemptDecision(
                        attempt_no, "rotate_profile", "auth", redact_secret_text(str(exc))
                    )
                )
                nxt = await auth.advance()
                if nxt is None:
                    raise RunFailoverError(str(exc), reason=FailoverReason.AUTH) from None
                continue
            if api_key:
                self.api_keys[model.provider] = api_key

            await self.emit(
                AttemptStart(
                    attempt=attempt_no,
                    provider=model.provider,
                    model=model.id,
                    auth_profile_id=auth.current,
                    thinking_level=thinking,
                    mode=plan.mode,
                    additions=addition_names,
                )
            )
            spec = AttemptSpec(
                attempt=attempt_no,
                session=session,
                session_id=self.session_id,
                session_key=self.session_key,
                model=model,
                stream_fn=stream_fn,
                api_key=api_key,
                thinking_level=thinking,
                system_prompt=self.system_prompt,
                tools=request.tools,
                plan=plan,
                context_window=window,
                reserve_tokens=reserve,
                engine=self.engine,
                policy=policy,
                sanitizers=sanitizers,
                validate_turns=self._validate_turns,
                on_sanitizer_error=self._sanitizer_fault,
                emit=self.emit,
                heartbeat=self.heartbeat,
                compact=functools.partial(self._compact_bool, window=window, model=model),
                truncate=functools.partial(self._truncate, window),
                run_signal=request.abort_signal,
                timeout_s=self.timeout_s,
                idle_timeout_s=self.idle_timeout_s,
                images=request.images if plan.mode == "prompt" and attempt_no == 1 else (),
            )
            outcome = await run_attempt(spec)
            self._absorb(outcome)
            facts = outcome.facts
            assistant = facts.assistant
            for usage in facts.usages:
                self.usage.add(usage)

            error_text = (
                assistant.error_message if assistant is not None and outcome.failed else None
            )
            reason: FailoverReason | None = None
            overflow = False
            status_code: int | None = None
            code: str | None = None
            if outcome.failed and assistant is not None and not outcome.externally_aborted:
                signal = signal_from_assistant_message(assistant)
                status_code, code = signal.status, signal.code
                classification = self.classify(signal)
                if classification is not None:
                    if classification.kind == "context_overflow":
                        overflow = True
                    else:
                        reason = classification.reason
                if is_context_overflow_error(error_text) or is_mid_turn_precheck_error_message(
                    error_text
                ):
                    overflow = True
                if outcome.timed_out and reason is None:
                    reason = FailoverReason.TIMEOUT
            await self.emit(
                AttemptEnd(
                    attempt=attempt_no,
                    provider=model.provider,
                    model=model.id,
                    auth_profile_id=auth.current,
                    stop_reason=assistant.stop_reason if assistant is not None else None,
                    duration_ms=outcome.duration_ms,
                    error=None if error_text is None else redact_secret_text(error_text),
                    failover_reason="context_overflow"
                    if overflow
                    else (None if reason is None else str(reason)),
                    status=status_code,
                    timed_out=outcome.timed_out,
                    idle_timed_out=outcome.idle_timed_out,
                    compactions=outcome.compactions,
                )
            )

            if outcome.externally_aborted:
                return result(
                    "aborted",
                    assistant=assistant,
                    error=RunErrorInfo("aborted", "the run was aborted"),
                    error_payload_text="⚠️ The run was aborted.",
                )

            step = step_idle_timeout_breaker(
                breaker,
                idle_timed_out=outcome.idle_timed_out,
                completed_model_progress=has_completed_model_progress_for_idle_breaker(
                    assistant_texts=facts.assistant_texts, tool_meta_count=len(facts.tool_metas)
                ),
                output_tokens=assistant.usage.output if assistant is not None else None,
            )
            breaker = step.state
            if step.tripped:
                message = format_idle_timeout_breaker_message(step.consecutive)
                return await self._retry_limit(
                    message, last_reason or FailoverReason.TIMEOUT, result
                )

            # -- overflow recovery chain ----------------------------------------------------
            if overflow:
                stated = parse_context_overflow_limit(error_text)
                if stated is not None and stated < window:
                    await self.emit(
                        AttemptDecision(
                            attempt_no,
                            "adjust_window",
                            "context_overflow",
                            f"the provider states a {stated}-token context limit (catalog: "
                            f"{window}); planning with {stated} from now on",
                        )
                    )
                    window = stated
                    reserve = min(reserve, max(1, window // 4))
                action = await self._recover_overflow(attempt_no, counters, outcome, window, model)
                if action == "retry":
                    continue
                failed_compaction = action == "surface_compaction_failure"
                kind = "compaction_failure" if failed_compaction else "context_overflow"
                return result(
                    "error",
                    assistant=assistant,
                    error=RunErrorInfo(
                        kind, redact_secret_text(error_text or kind), "context_overflow"
                    ),
                    error_payload_text=COMPACTION_FAILURE_USER_TEXT
                    if failed_compaction
                    else CONTEXT_OVERFLOW_USER_TEXT,
                )

            # -- timeout compaction -----------------------------------------------------------
            if should_compact_after_timeout(
                timed_out=outcome.timed_out,
                timed_out_during_tool_execution=outcome.timed_out_during_tool_execution,
                prompt_tokens=outcome.prompt_tokens,
                context_window_tokens=window,
                timeout_compaction_attempts=counters.timeout_compactions,
            ):
                counters.timeout_compactions += 1
                await self._set_aside(session)
                await self.emit(
                    AttemptDecision(
                        attempt_no,
                        "compact",
                        "timeout",
                        "the model timed out with the prompt above 65% of the context window: "
                        "compacting before retrying",
                    )
                )
                if await self._compact_bool(
                    "timeout", outcome.prompt_tokens, window=window, model=model
                ):
                    continue

            if outcome.failed:
                assert assistant is not None
                # thinking level the provider refuses: step down instead of failing
                lower = downgrade_thinking_level(thinking)
                if lower is not None and is_thinking_level_rejection(error_text):
                    await self._set_aside(session)
                    await self.emit(
                        AttemptDecision(
                            attempt_no,
                            "downgrade_thinking",
                            None if reason is None else str(reason),
                            f"the provider rejected thinking level {thinking!r}; retrying "
                            f"with {lower!r}",
                        )
                    )
                    thinking = lower
                    continue
                terminal = _terminal_of(outcome, assistant)
                last_reason = merge_retry_failover_reason(
                    last_reason, reason, timed_out=outcome.timed_out
                )
                decision_input = AssistantDecisionInput(
                    terminal=terminal,
                    fallback_configured=self.fallback_configured,
                    failover_failure=reason is not None,
                    failover_reason=reason,
                    profile_rotated=False,
                )
                decision = resolve_run_failover_decision(decision_input)
                if decision.action == "rotate_profile":
                    previous = auth.current
                    recorded = await auth.record_failure(
                        None if reason is None else str(reason),
                        provider_started=facts.provider_started,
                        run_id=self.run_id,
                    )
                    nxt = await auth.advance()
                    if nxt is not None:
                        thinking = initial_thinking
                        await self._set_aside(session)
                        await self.emit(
                            ProfileRotated(
                                provider=model.provider,
                                from_profile=previous,
                                to_profile=nxt,
                                reason=None if reason is None else str(reason),
                                recorded_reason=recorded,
                            )
                        )
                        await self.emit(
                            AttemptDecision(
                                attempt_no,
                                "rotate_profile",
                                None if reason is None else str(reason),
                                f"{model.ref} failed ({reason or 'timeout'}) with profile "
                                f"{previous}; retrying with {nxt}",
                            )
                        )
                        continue
                    decision = resolve_run_failover_decision(
                        AssistantDecisionInput(
                            terminal=terminal,
                            fallback_configured=self.fallback_configured,
                            failover_failure=reason is not None,
                            failover_reason=reason,
                            profile_rotated=True,
                        )
                    )
                if (
                    reason == FailoverReason.RATE_LIMIT
                    and decision.action != "fallback_model"
                    and counters.same_model_rate_limit < MAX_SAME_MODEL_RATE_LIMIT_RETRIES
                ):
                    retry_after = assistant.error_retry_after_ms
                    delay_ms = self.runtime.retry_backoff_scale * (
                        resolve_same_model_rate_limit_retry_delay_ms(
                            counters.same_model_rate_limit,
                            None if retry_after is None else float(retry_after) / 1000,
                        )
                    )
                    counters.same_model_rate_limit += 1
                    await self._set_aside(session)
                    await self.emit(
                        RetryScheduled(
                            attempt_no,
                            "rate_limit",
                            counters.same_model_rate_limit,
                            MAX_SAME_MODEL_RATE_LIMIT_RETRIES,
                            delay_ms,
                        )
                    )
                    await self._sleep(delay_ms / 1000)
                    continue
                if decision.action == "fallback_model":
                    await self.emit(
                        AttemptDecision(
                            attempt_no,
                            "fallback_model",
                            None if decision.reason is None else str(decision.reason),
                            f"{model.ref} cannot recover ({decision.reason}); handing over to "
                            "the next model",
                        )
                    )
                    raise RunFailoverError(
                        error_text or "model failed",
                        reason=decision.reason,
                        status=status_code,
                        code=code,
                        result=result("error", assistant=assistant),
                    )
                if (
                    outcome.idle_timed_out
                    and counters.same_model_idle_timeout < MAX_SAME_MODEL_IDLE_TIMEOUT_RETRIES
                ):
                    counters.same_model_idle_timeout += 1
                    await self._set_aside(session)
                    await self.emit(
                        RetryScheduled(
                            attempt_no,
                            "idle_timeout",
                            counters.same_model_idle_timeout,
                            MAX_SAME_MODEL_IDLE_TIMEOUT_RETRIES,
                        )
                    )
                    continue
                retry_facts = self._retry_facts(facts)
                if (
                    reason is None
                    and not outcome.timed_out
                    and should_retry_silent_error_assistant_turn(retry_facts)
                    and counters.empty_error < MAX_EMPTY_ERROR_RETRIES
                ):
                    counters.empty_error += 1
                    await self._set_aside(session)
                    await self.emit(
                        RetryScheduled(
                            attempt_no,
                            "silent_error",
                            counters.empty_error,
                            MAX_EMPTY_ERROR_RETRIES,
                        )
                    )
                    continue
                await self.emit(
                    AttemptDecision(
                        attempt_no,
                        decision.action,
                        None if decision.reason is None else str(decision.reason),
                        "no recovery applies: surfacing the error",
                    )
                )
                status = "timeout" if outcome.timed_out else "error"
                return result(
                    status,
                    assistant=assistant,
                    timed_out=outcome.timed_out,
                    error=RunErrorInfo(
                        "timeout" if outcome.timed_out else "provider",
                        redact_secret_text(error_text or "the model call failed"),
                        None if reason is None else str(reason),
                    ),
                )

            # -- the attempt produced a turn: directed retries ---------------------------------
            retry_facts = self._retry_facts(facts)
            payload_count = len(self._success_payloads(result("ok", assistant=assistant)))
            instruction = resolve_reasoning_only_retry_instruction(retry_facts)
            if instruction and counters.reasoning_only < DEFAULT_REASONING_ONLY_RETRY_LIMIT:
                counters.reasoning_only += 1
                counters.additions["reasoning_only"] = instruction
                await self.emit(
                    RetryScheduled(
                        attempt_no,
                        "reasoning_only",
                        counters.reasoning_only,
                        DEFAULT_REASONING_ONLY_RETRY_LIMIT,
                    )
                )
                continue
            if not instruction:
                empty = resolve_empty_response_retry_instruction(
                    retry_facts, payload_count=payload_count, provider=model.provider
                )
                if empty and counters.empty_response < DEFAULT_EMPTY_RESPONSE_RETRY_LIMIT:
                    counters.empty_response += 1
                    counters.additions["empty_response"] = empty
                    await self.emit(
                        RetryScheduled(
                            attempt_no,
                            "empty_response",
                            counters.empty_response,
                            DEFAULT_EMPTY_RESPONSE_RETRY_LIMIT,
                        )
                    )
                    continue
            continuation = resolve_compaction_continuation_retry_instruction(
                retry_facts,
                attempt_compaction_count=outcome.compactions,
                payload_count=payload_count,
                attempts_so_far=counters.compaction_continuation,
            )
            if continuation:
                counters.compaction_continuation += 1
                counters.additions["compaction_continuation"] = continuation
                await self.emit(RetryScheduled(attempt_no, "compaction_continuation", 1, 1))
                continue
            if (
                should_retry_missing_assistant_turn(retry_facts, payload_count=payload_count)
                and counters.missing_assistant < MAX_MISSING_ASSISTANT_RETRIES
            ):
                counters.missing_assistant += 1
                await self.emit(
                    RetryScheduled(
                        attempt_no,
                        "missing_assistant",
                        counters.missing_assistant,
                        MAX_MISSING_ASSISTANT_RETRIES,
                    )
                )
                continue

            incomplete = resolve_incomplete_turn_payload_text(
                retry_facts, payload_count=payload_count
            )
            harness = None
            if payload_count == 0:
                if instruction:
                    harness = "reasoning-only"
                elif assistant is None or not assistant.content or not facts.assistant_texts:
                    harness = "empty"
            if auth.current is not None and self.task_group is not None:
                mark_embedded_run_auth_profile_success(
                    self.task_group,
                    auth.scoped or runtime.auth_store,
                    auth.current,
                    model.provider,
                    run_id=self.run_id,
                    session_id=self.session_id,
                )
            await self.emit(AttemptDecision(attempt_no, "done", None, "the turn completed"))
            return result(
                "ok",
                assistant=assistant,
                incomplete_text=incomplete,
                harness_classification=harness,
            )

    # loop helpers -------------------------------------------------------------------------

    async def _retry_limit(
        self,
        message: str,
        last_reason: FailoverReason | None,
        result: Callable[..., _CandidateResult],
    ) -> _CandidateResult:
        decision = resolve_run_failover_decision(
            RetryLimitDecisionInput(self.fallback_configured, last_reason)
        )
        await self.emit(
            AttemptDecision(
                self.total_attempts,
                decision.action,
                None if decision.reason is None else str(decision.reason),
                message,
            )
        )
        if decision.action == "fallback_model":
            raise RunFailoverError(message, reason=decision.reason)
        return result(
            "error",
            error=RunErrorInfo(
                "retry_limit", message, None if last_reason is None else str(last_reason)
            ),
            error_payload_text=RETRY_LIMIT_USER_TEXT,
            liveness_state="blocked",
        )

    async def _recover_overflow(
        self,
        attempt_no: int,
        counters: _Counters,
        outcome: AttemptOutcome,
        window: int,
        model: Model,
    ) -> str:
        """Walk the overflow chain until a step says retry, or it is exhausted."""
        session = self.session
        assert session is not None
        await self._set_aside(session)
        from ..context import session_likely_has_oversized_tool_results

        while True:
            messages = session.build_session_context().messages
            state = OverflowRecoveryState(
                attempt_compactions=outcome.compactions,
                retried_after_in_attempt_compaction=counters.retried_after_in_attempt_compaction,
                overflow_compaction_attempts=counters.overflow_compactions,
                compaction_exhausted=counters.compaction_exhausted,
                last_compaction_failed=counters.last_compaction_failed,
                truncation_attempted=counters.truncation_attempted,
                has_oversized_tool_results=session_likely_has_oversized_tool_results(
                    messages, context_window_tokens=window
                ),
            )
            step = resolve_overflow_recovery_step(state)
            if step == "retry_without_compaction":
                counters.retried_after_in_attempt_compaction = True
                await self.emit(
                    AttemptDecision(
                        attempt_no,
                        "retry",
                        "context_overflow",
                        "context overflow persisted after in-attempt compaction; retrying "
                        "the prompt without additional compaction",
                    )
                )
                return "retry"
            if step == "compact":
                counters.overflow_compactions += 1
                await self.emit(
                    AttemptDecision(
                        attempt_no,
                        "compact",
                        "context_overflow",
                        f"context overflow: compacting the session "
                        f"({counters.overflow_compactions}/3) before retrying",
                    )
                )
                res = await self._compact("overflow", outcome.prompt_tokens, window, model)
                if res.compacted:
                    counters.last_compaction_failed = False
                    return "retry"
                counters.compaction_exhausted = True
                counters.last_compaction_failed = not res.ok
                continue
            if step == "truncate_tool_results":
                counters.truncation_attempted = True
                await self.emit(
                    AttemptDecision(
                        attempt_no,
                        "truncate",
                        "context_overflow",
                        "context overflow: truncating oversized tool results before retrying",
                    )
                )
                truncated = await self._truncate(window)
                if truncated > 0:
                    return "retry"
                continue
            await self.emit(
                AttemptDecision(
                    attempt_no,
                    "surface_error",
                    "context_overflow",
                    "context overflow: compaction and truncation could not make it fit",
                )
            )
            return step

    async def _plan_input(
        self, session: SessionManager, first_attempt: bool, additions: list[str]
    ) -> Any:
        messages = session.build_session_context().messages
        last = messages[-1] if messages else None
        branch = session.get_branch()
        leaf_id = branch[-1]["id"] if branch else None
        last_is_prompt = (
            self.prompt_message is not None
            and last is not None
            and (
                getattr(last, "role", None) == "user"
                and getattr(last, "timestamp", None) == self.prompt_message.timestamp
                and last.content == self.prompt_message.content
            )
        )
        plan = plan_attempt_input(
            first_attempt=first_attempt,
            base_prompt=self.request.prompt,
            additions=additions,
            last_role=getattr(last, "role", None),
            last_is_run_prompt=last_is_prompt,
            leaf_is_run_prompt=last_is_prompt and leaf_id == self.prompt_entry_id,
        )
        if plan.drop_orphan:
            from .session_ops import set_aside_orphan_user_message

            await set_aside_orphan_user_message(session)
        if plan.rewind_prompt and self.prompt_entry_id is not None:
            entry = session.get_entry(self.prompt_entry_id)
            parent = entry.get("parentId") if entry else None
            if parent:
                await session.branch(str(parent))
            else:
                await session.reset_leaf()
        return plan

    def _absorb(self, outcome: AttemptOutcome) -> None:
        self.run_entry_ids.update(outcome.entry_ids.values())
        if outcome.prompt_entry_id is not None and outcome.prompt_message is not None:
            text = outcome.prompt_message.content
            if self.prompt_message is None or (
                isinstance(text, str) and self.request.prompt in text
            ):
                self.prompt_entry_id = outcome.prompt_entry_id
                self.prompt_message = outcome.prompt_message
        self.total_compactions += outcome.compactions

    def _retry_facts(self, facts: Any) -> RetryFacts:
        return RetryFacts(
            assistant_texts=facts.assistant_texts,
            assistant=facts.assistant,
            tool_metas=facts.tool_metas,
            last_tool_error=facts.last_tool_error,
            had_potential_side_effects=attempt_had_potential_side_effects(facts.tool_metas),
            items_started=len(facts.tool_metas),
            items_completed=len(facts.tool_metas),
        )

    async def _set_aside(self, session: SessionManager) -> None:
        from .session_ops import set_aside_failed_tail

        await set_aside_failed_tail(session)

    async def _sleep(self, seconds: float) -> None:
        if seconds <= 0:
            return
        signal = self.request.abort_signal
        if signal is None:
            await anyio.sleep(seconds)
            return
        with signal.linked_cancel_scope():
            await anyio.sleep(seconds)

    def _validate_turns(self, messages: list[Any], policy: Any) -> list[Any] | None:
        validated, _plugin = self.hooks.validate_replay_turns(messages, policy)
        return validated

    def _sanitizer_fault(self, name: str, plugin: str | None, exc: BaseException) -> None:
        self.hooks.record_fault(plugin, "register_transcript_sanitizers", exc)

    # compaction and truncation ------------------------------------------------------------

    async def _summary_models(self, model: Model) -> list[SummaryModel]:
        """The summarization chain: the compaction model, the run's model, its fallbacks —
        each with a key from its provider's auth profiles."""
        runtime, config = self.runtime, self.config
        chain: list[Model] = []
        if config.agent.compaction_model:
            chain.append(runtime.resolve_model(config.agent.compaction_model))
        chain.append(model)
        for candidate in self.candidates:
            other = runtime.resolve_model(candidate.ref)
            if other.ref not in {m.ref for m in chain}:
                chain.append(other)
        return [
            SummaryModel(m, runtime.stream_fn_for(m), await self._api_key_for(m)) for m in chain
        ]

    async def _api_key_for(self, model: Model) -> str | None:
        """The key in use for ``model``'s provider, else its first usable profile's."""
        known = self.api_keys.get(model.provider)
        if known is not None:
            return known
        auth = AuthController(
            store=self.runtime.auth_store,
            settings=self.config.auth,
            provider=model.provider,
            model_id=model.id,
            env=self.runtime.env,
        )
        try:
            await auth.start()
            key = await auth.api_key()
        except (AuthProfilesUnavailableError, UnresolvedCredentialError):
            return None
        if key is not None:
            self.api_keys[model.provider] = key
        return key

    async def _compact(
        self, trigger: str, tokens: int | None, window: int, model: Model
    ) -> CompactResult:
        from .session_ops import compact_with_engine

        session = self.session
        assert session is not None
        count = self.total_compactions + 1
        await self.emit(CompactionStart(trigger=trigger, count=count, tokens_before=tokens))
        result = await compact_with_engine(
            self.engine,
            session,
            await self._summary_models(model),
            session_key=self.session_key,
            token_budget=max(1, window - min(DEFAULT_RESERVE_TOKENS, model.max_tokens or 0)),
            current_token_count=tokens,
            force=True,
            keep_recent_tokens=min(self.config.agent.keep_recent_tokens, max(1, window // 4)),
            abort_signal=self.request.abort_signal,
            window_tokens=window,
        )
        await session.flush()
        details = result.result
        if result.compacted and trigger != "preemptive":
            self.total_compactions += 1
        await self.emit(
            CompactionEnd(
                trigger=trigger,
                ok=result.ok,
                compacted=result.compacted,
                reason=None if result.reason is None else redact_secret_text(result.reason),
                tokens_before=None if details is None else details.tokens_before,
                tokens_after=None if details is None else details.tokens_after,
            )
        )
        self.heartbeat()
        return result

    async def _compact_bool(
        self, trigger: str, tokens: int | None, *, window: int, model: Model
    ) -> bool:
        return (await self._compact(trigger, tokens, window, model)).compacted

    async def _truncate(self, window: int) -> int:
        from .session_ops import truncate_oversized_tool_results_in_session

        session = self.session
        assert session is not None
        outcome = await truncate_oversized_tool_results_in_session(session, window)
        await self.emit(
            ToolResultsTruncated(outcome.truncated, outcome.rewritten_entries, outcome.reason)
        )
        return outcome.truncated


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
