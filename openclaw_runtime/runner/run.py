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

import logging
import os
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from .._exceptions import (
    ConfigurationError,
    FailoverExhaustedError,
    OpenClawRuntimeError,
    PluginBackendError,
    ProviderError,
)
from ..auth import UnresolvedCredentialError
from ..containment import PluginFault, component_unit, fault_scope
from ..context.compaction import SummaryModel
from ..context.engine import CompactResult
from ..events import Event
from ..failover import (
    EmbeddedRunResult,
    ModelCandidate,
    RunPayload,
    classify_embedded_agent_run_result_for_model_fallback,
    hook_classifier,
    resolve_model_candidate_chain,
    run_with_model_fallback,
)
from ..failover.events import redact_secret_text
from ..llm import Model, ThinkingLevel
from ..redaction import package_logger, redact_event
from ..transcript import validate_session_id
from .attempt import AttemptOutcome, collect_attempt_facts
from .attempt_input import AttemptInputPlan, plan_attempt_input
from .attempt_loop import DEFAULT_RESERVE_TOKENS, ModelAttemptLoop
from .auth_controller import AuthController, AuthProfilesUnavailableError
from .candidate import CandidateResult, RunFailoverError
from .entry import (
    resolve_initial_run_model_ref,
    resolve_initial_thinking_level,
)
from .error_kind import provider_error_kind, user_facing_reason
from .events import (
    CompactionEnd,
    CompactionStart,
    LaneAcquired,
    LaneWait,
    PluginFaultRaised,
    PluginQuarantined,
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
from .reply_stream import reply_observer_for, verbose_mode_for, verbose_tool_metas
from .request import RunErrorInfo, RunRequest, RunResult
from .run_error import describe_unfinished_turn, failed_run_error
from .session_ops import set_aside_failed_tail
from .steering import (
    SteeringLease,
    ack_leased_agent_steering_items,
    lease_pending_agent_steering_items,
    prepend_agent_steering_prompt,
    release_leased_agent_steering_items,
)

if TYPE_CHECKING:
    from ..backends import Session
    from .services import RunHost

__all__ = ["RunEventCallback", "RunFailoverError", "run_embedded_agent"]

logger = package_logger(logging.getLogger("openclaw_runtime.runner"))

RunEventCallback = Callable[[Event], Awaitable[None] | None]


async def run_embedded_agent(
    runtime: RunHost, request: RunRequest, *, on_event: RunEventCallback | None = None
) -> RunResult:
    """Run one agent turn for ``request``; see the module docstring. Provider failures end
    as an error outcome with an error payload, never as an exception; bad input (an unknown
    model, an invalid session id) raises ``ConfigurationError``/``ValueError`` up front."""
    run = _Run(runtime, request, on_event)
    return await run.execute()


class _Run:
    """State of one run; the methods are its phases."""

    def __init__(
        self, runtime: RunHost, request: RunRequest, on_event: RunEventCallback | None
    ) -> None:
        self.runtime = runtime
        self.services = runtime.services
        self.request = request
        self.config = runtime.config
        self.on_event = on_event
        self.hooks = runtime.hooks
        self.run_id = request.run_id or uuid.uuid4().hex
        self.started_at = time.time() * 1000
        self.perf_start = time.perf_counter()
        self.usage = UsageAccumulator()
        #: block replies and messaging-tool sends of this run (``openclaw_runtime.reply``)
        self.reply_observer = reply_observer_for(request, runtime.config.agent.reply)
        self.total_attempts = 0
        self.total_compactions = 0
        self.session: Session | None = None
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
        self.base_prompt = request.prompt
        self.start_leaf_id: str | None = None
        self._last_beat = 0.0
        self._emit_faults = 0
        #: why the last compaction ran out of the run's time (None: it did not); the attempt
        #: loop ends the run on its timeout when a recovery compaction did
        self.compaction_timeout: str | None = None
        #: Plugin faults raised during this run (``RunResult.faults``); ``_unreported`` are
        #: the ones not yet on the event stream.
        self.faults: list[PluginFault] = []
        self._unreported: list[PluginFault] = []
        self._reporting = False

    # events -------------------------------------------------------------------------------

    def _on_plugin_fault(self, fault: PluginFault) -> None:
        self.faults.append(fault)
        self._unreported.append(fault)

    async def report_faults(self) -> None:
        """Put the plugin faults raised since the last event on the stream (an observer that
        raises on one of them adds another, until its breaker opens)."""
        if self._reporting:
            return
        self._reporting = True
        try:
            while self._unreported:
                fault = self._unreported.pop(0)
                unit = fault.unit or fault.hook
                await self._dispatch(PluginFaultRaised(fault.plugin, fault.hook, unit, fault.error))
                if fault.quarantined:
                    await self._dispatch(
                        PluginQuarantined(fault.plugin, fault.hook, unit, fault.error)
                    )
        finally:
            self._reporting = False

    async def emit(self, event: Event) -> None:
        """To the caller's callback and the plugins' ``on_agent_event``, followed by any
        plugin faults raised since the last event."""
        await self.reply_observer.observe(event)
        await self._dispatch(event)
        if self._unreported and event.type != "run_end":
            await self.report_faults()

    async def _dispatch(self, event: Event) -> None:
        """To the caller's callback and the plugins' ``on_agent_event``; an observer that
        raises is skipped (the guard records it; it must not change the run). Run-level events
        are redacted here (streamed deltas are not: their error texts are masked at the source)."""
        event = redact_event(event)
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
        """Progress: push the lanes' deadlines out (at most every half second — every
        streamed token calls this, and moving a deadline reschedules a timer)."""
        now = time.monotonic()
        if now - self._last_beat < 0.5:
            return
        self._last_beat = now
        for beat in self.heartbeats:
            beat()

    # entry --------------------------------------------------------------------------------

    async def _resolve_entry(self) -> PluginBackendError | None:
        """Session id and key, model chain, limits. Bad input raises here; a session index
        backend that fails is returned instead, so the run still ends as a result naming
        the plugin (like a failing lane or session store)."""
        request, config = self.request, self.config
        index = self.services.session_index
        key = (request.session_key or "").strip() or None
        session_id = (request.session_id or "").strip() or None
        failed: PluginBackendError | None = None
        try:
            if session_id is None and key is not None:
                session_id = await index.lookup_id(key)
            # a key seen for the first time is claimed atomically before anything else runs
            self.claim_key = session_id is None and key is not None
            if session_id is None:
                session_id = uuid.uuid4().hex
            if key is None:
                key = await index.lookup_key(session_id)
        except PluginBackendError as exc:
            failed, self.claim_key = exc, False
            session_id = session_id or uuid.uuid4().hex
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
        compaction_model = config.agent.compaction_model
        if compaction_model:
            # checked up front: found only when a compaction runs, it crashed the run mid-turn
            try:
                self.runtime.resolve_model(compaction_model)  # as _summary_models resolves it
            except OpenClawRuntimeError as exc:
                raise ConfigurationError(f"compaction model {compaction_model!r}: {exc}") from exc
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
        return failed

    # the run ------------------------------------------------------------------------------

    async def execute(self) -> RunResult:
        with fault_scope(self._on_plugin_fault):
            return await self._execute()

    async def _execute(self) -> RunResult:
        self.services.validate()  # a [backends] name nothing registered: raise up front
        failed = await self._resolve_entry()
        if self.claim_key:
            assert self.session_key is not None
            try:
                self.session_id = await self.services.session_index.claim(
                    self.session_key, self.session_id
                )
            except PluginBackendError as exc:
                failed = exc
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
            if failed is not None:
                raise failed
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
        except PluginBackendError as exc:
            result = self._backend_failed(exc)
        except BaseExceptionGroup as group:
            failed = _lone_backend_error(group)
            if failed is None:
                raise
            result = self._backend_failed(failed)
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
        await self.report_faults()
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

    def _backend_failed(self, exc: PluginBackendError) -> RunResult:
        """A plugin's backend raised: the run ends with an error naming the plugin."""
        message = redact_secret_text(str(exc))
        return self._final(
            status="error",
            error=RunErrorInfo("plugin", message),
            payloads=[ReplyPayload(text=f"⚠️ {message}", is_error=True)],
        )

    async def _in_lanes(self) -> RunResult:
        request = self.request
        priority = resolve_embedded_run_session_queue_priority(
            request.trigger, request.input_provenance
        )
        timeout_ms = 0 if self.timeout_s is None else self.timeout_s * 1000
        lane_timeout_s = resolve_embedded_run_lane_timeout_ms(timeout_ms) / 1000
        session_lane = resolve_session_lane(self.session_key or self.session_id)
        global_lane = resolve_global_lane(request.lane)
        services = self.services
        lanes = services.lanes
        await services.wait_for_session_maintenance(self.session_id)
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
        services = self.services
        session = await services.checkout_session(self.session_id, cwd=os.getcwd())
        self.session = session
        self.start_leaf_id = session.get_leaf_id()
        try:
            if self.session_key:
                await services.session_index.bind(self.session_key, self.session_id)
            self.engine = await self.runtime.resolve_context_engine()
            lease = await self._lease_steering()
            result: RunResult | None = None
            try:
                async with anyio.create_task_group() as tg:
                    self.task_group = tg
                    result = await self._fallback_chain()
            finally:
                if lease is not None:
                    with anyio.CancelScope(shield=True):
                        await self._settle_steering(lease, result)
            assert result is not None
            return result
        finally:
            self.task_group = None
            with anyio.CancelScope(shield=True):
                await services.checkin_session(session)

    async def _lease_steering(self) -> SteeringLease | None:
        """Lease the sub-agent results waiting for this session; they lead the prompt as
        data (never as instructions) and are acked only if the turn succeeds."""
        store = self.services.steering_store
        requester = self.session_key or self.session_id
        lease = await lease_pending_agent_steering_items(store, requester, time.time() * 1000)
        if lease is not None:
            self.base_prompt = prepend_agent_steering_prompt(lease.prompt, self.request.prompt)
        return lease

    async def _settle_steering(self, lease: SteeringLease, result: RunResult | None) -> None:
        """Ack on success; otherwise hand the items back for the next turn (none is lost,
        none is delivered twice)."""
        store = self.services.steering_store
        if result is not None and result.ok:
            await ack_leased_agent_steering_items(store, lease, now_ms=time.time() * 1000)
        else:
            error = result.error.message if result is not None and result.error else "run failed"
            await release_leased_agent_steering_items(store, lease, error=error)

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

    def _classify_result(self, result: CandidateResult, candidate: ModelCandidate) -> Any:
        if result.status != "ok":
            return None
        payloads = tuple(
            RunPayload(text=p.text, is_error=bool(p.is_error), is_reasoning=p.is_reasoning)
            for p in self.success_payloads(result)
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
        if not wanted:
            return []
        # this run's entries are at the end of the branch: walk back until they are passed
        out = []
        remaining = len(wanted)
        branch = session.get_branch()
        for entry in reversed(branch):
            if remaining == 0:
                break
            if entry.get("id") in wanted:
                remaining -= 1
                if entry.get("type") == "message":
                    message = session.message_of(entry)
                    if message is not None:
                        out.append(message)
            elif entry.get("id") == self.start_leaf_id:
                break
        out.reverse()
        return out

    def success_payloads(self, result: CandidateResult) -> list[ReplyPayload]:
        messages = self._run_messages()
        facts = collect_attempt_facts(messages)
        verbose = verbose_mode_for(self.request, self.config.agent.reply)
        metas = verbose_tool_metas(messages, verbose) if verbose != "off" else facts.tool_metas
        payloads = build_embedded_run_payloads(
            assistant_texts=list(facts.assistant_texts),
            tool_metas=list(metas),
            verbose_level=verbose,
            inline_tool_results_allowed=verbose != "off",
            last_assistant=facts.assistant,
            current_assistant=result.assistant,
            last_tool_error=facts.last_tool_error,
            session_key=self.session_key or "",
            is_cron_trigger=self.request.trigger == "cron",
            thinking_level=self.thinking_level,
            messaging_tool_sent_texts=[
                *self.request.messaging_tool_sent_texts,
                *self.reply_observer.tracker.sent_texts,
            ],
            current_message_id=self.request.current_message_id,
        )
        if not payloads and result.incomplete_text:
            payloads = [ReplyPayload(text=result.incomplete_text, is_error=True)]
        return payloads

    def _from_candidate(self, result: CandidateResult) -> RunResult:
        if result.status == "ok":
            payloads = self.success_payloads(result)
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
        kind = (
            "failover"
            if isinstance(exc, FailoverExhaustedError)
            else provider_error_kind(message, timed_out=False)
        )
        if partial is not None and partial.error is not None:
            kind = partial.error.kind
        return self._final(
            status="error",
            error=RunErrorInfo(
                kind, message, user_facing_reason(kind, None if reason is None else str(reason))
            ),
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
        if error is None and outcome.status != "ok":
            # the one place the rule "every failed run says why" is enforced
            facts = collect_attempt_facts(self._run_messages())
            error = failed_run_error(
                outcome,
                None,
                cause=describe_unfinished_turn(facts.last_tool_error, facts.assistant),
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
            faults=self.faults,  # the run's own list: faults while run_end is observed count
        )

    # the attempt loop ---------------------------------------------------------------------

    async def _run_candidate(self, candidate: ModelCandidate) -> CandidateResult:
        return await ModelAttemptLoop(self, candidate).execute()

    # services for the attempt loop ----------------------------------------------------------

    async def plan_input(self, first_attempt: bool, additions: list[str]) -> AttemptInputPlan:
        """How the next attempt enters the transcript (see ``attempt_input``); applies the
        leaf moves the plan asks for."""
        session = self.session
        assert session is not None
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
            base_prompt=self.base_prompt,
            additions=additions,
            last_role=getattr(last, "role", None),
            last_is_run_prompt=last_is_prompt,
            leaf_is_run_prompt=last_is_prompt and leaf_id == self.prompt_entry_id,
            tool_result_after_prompt=_tool_result_after(branch, self.prompt_entry_id),
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

    def absorb(self, outcome: AttemptOutcome) -> None:
        """Remember the attempt's entries, the run's prompt and its compactions."""
        self.run_entry_ids.update(outcome.entry_ids.values())
        if outcome.prompt_entry_id is not None and outcome.prompt_message is not None:
            text = outcome.prompt_message.content
            if self.prompt_message is None or (isinstance(text, str) and self.base_prompt in text):
                self.prompt_entry_id = outcome.prompt_entry_id
                self.prompt_message = outcome.prompt_message
        self.total_compactions += outcome.compactions

    async def set_aside_failed_turn(self) -> None:
        """Move the leaf back over a failed turn before retrying (nothing is deleted)."""
        assert self.session is not None
        await set_aside_failed_tail(self.session)

    async def sleep(self, seconds: float) -> None:
        """Back off, but wake up when the run is aborted."""
        if seconds <= 0:
            return
        signal = self.request.abort_signal
        if signal is None:
            await anyio.sleep(seconds)
            return
        with signal.linked_cancel_scope():
            await anyio.sleep(seconds)

    def validate_turns(self, messages: list[Any], policy: Any) -> list[Any] | None:
        """The first ``validate_replay_turns`` plugin's answer."""
        validated, _plugin = self.hooks.validate_replay_turns(messages, policy)
        return validated

    def sanitizer_fault(self, name: str, plugin: str | None, exc: BaseException) -> None:
        """A sanitizer raised: record it against its plugin; the pipeline skips it."""
        self.hooks.record_fault(
            plugin,
            "register_transcript_sanitizers",
            exc,
            unit=component_unit("transcript_sanitizer", name),
        )

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
            store=self.services.auth_store,
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

    async def compact(
        self, trigger: str, tokens: int | None, *, window: int, model: Model
    ) -> CompactResult:
        """Compact through the context engine (directly: the run holds the lane)."""
        from .session_ops import compact_with_engine

        session = self.session
        assert session is not None
        count = self.total_compactions + 1
        await self.emit(CompactionStart(trigger=trigger, count=count, tokens_before=tokens))
        result: CompactResult | None = None
        unfinished = "compaction did not complete"
        self.compaction_timeout = None
        try:
            # the run's timeout bounds a compaction like it bounds a model call: a hung
            # summary request is cancelled here, not 30 s later by the lane
            with anyio.move_on_after(self.timeout_s) as deadline:
                result = await compact_with_engine(
                    self.engine,
                    session,
                    await self._summary_models(model),
                    session_key=self.session_key,
                    token_budget=max(
                        1, window - min(DEFAULT_RESERVE_TOKENS, model.max_tokens or 0)
                    ),
                    current_token_count=tokens,
                    force=True,
                    keep_recent_tokens=min(
                        self.config.agent.keep_recent_tokens, max(1, window // 4)
                    ),
                    abort_signal=self.request.abort_signal,
                    window_tokens=window,
                )
            if deadline.cancelled_caught:
                self.compaction_timeout = f"compaction timed out after {self.timeout_s:g}s"
                result = CompactResult(
                    ok=False, compacted=False, reason=f"{self.compaction_timeout} (run timeout)"
                )
            await session.flush()
        except BaseException as exc:
            unfinished = f"compaction did not complete: {type(exc).__name__}: {exc}"
            raise
        finally:
            # every compaction_start is closed, whatever ended the compaction
            with anyio.CancelScope(shield=True):
                await self.emit(_compaction_end(trigger, result, unfinished))
        assert result is not None
        if result.compacted and trigger != "preemptive":
            self.total_compactions += 1
        self.heartbeat()
        return result

    async def compact_bool(
        self, trigger: str, tokens: int | None, *, window: int, model: Model
    ) -> bool:
        """``compact`` reduced to "did it compact"."""
        return (await self.compact(trigger, tokens, window=window, model=model)).compacted

    async def truncate(self, window: int) -> int:
        """Cut oversized tool results on the branch; how many were cut."""
        from .session_ops import truncate_oversized_tool_results_in_session

        session = self.session
        assert session is not None
        outcome = await truncate_oversized_tool_results_in_session(session, window)
        await self.emit(
            ToolResultsTruncated(outcome.truncated, outcome.rewritten_entries, outcome.reason)
        )
        return outcome.truncated


def _compaction_end(trigger: str, result: CompactResult | None, unfinished: str) -> CompactionEnd:
    """The ``compaction_end`` of a compaction that returned ``result`` (None: it raised or
    was cancelled, and ``unfinished`` says why)."""
    if result is None:
        return CompactionEnd(
            trigger=trigger, ok=False, compacted=False, reason=redact_secret_text(unfinished)
        )
    details = result.result
    return CompactionEnd(
        trigger=trigger,
        ok=result.ok,
        compacted=result.compacted,
        reason=None if result.reason is None else redact_secret_text(result.reason),
        tokens_before=None if details is None else details.tokens_before,
        tokens_after=None if details is None else details.tokens_after,
    )


def _tool_result_after(branch: list[dict[str, Any]], entry_id: str | None) -> bool:
    """Does a tool result follow the entry ``entry_id`` on ``branch``?"""
    if entry_id is None:
        return False
    seen = False
    for entry in branch:
        if seen and entry.get("type") == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "toolResult":
                return True
        seen = seen or entry.get("id") == entry_id
    return False


def _lone_backend_error(group: BaseExceptionGroup[Any]) -> PluginBackendError | None:
    """The one ``PluginBackendError`` a task group wrapped, if that is all it holds."""
    leaves: list[BaseException] = []
    pending: list[BaseException] = [group]
    while pending:
        item = pending.pop()
        if isinstance(item, BaseExceptionGroup):
            pending.extend(item.exceptions)
        else:
            leaves.append(item)
    if len(leaves) == 1 and isinstance(leaves[0], PluginBackendError):
        return leaves[0]
    return None
