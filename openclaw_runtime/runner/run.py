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
wires them and emits what it decided. The run's state and the services its attempts call are
``run_state.RunState`` (shared with ``attempt_loop``); its ``RunResult`` is built in
``run_result``.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Awaitable
from typing import Any

import anyio

from .._exceptions import (
    ConfigurationError,
    FailoverExhaustedError,
    OpenClawRuntimeError,
    PluginBackendError,
    ProviderError,
)
from ..containment import fault_scope
from ..failover import (
    ModelCandidate,
    resolve_model_candidate_chain,
    run_with_model_fallback,
)
from ..llm import ThinkingLevel
from ..transcript import validate_session_id
from .attempt_loop import ModelAttemptLoop
from .candidate import CandidateResult, RunFailoverError
from .checkin import (
    check_in_session,
    check_out_session,
    checkin_never_suspends,
)
from .cron_reply import offers_before_agent_reply
from .engine_lifecycle import (
    bootstrap_context_engine,
    maintain_after_turn,
    session_needs_bootstrap,
)
from .entry import (
    resolve_initial_run_model_ref,
    resolve_initial_thinking_level,
)
from .events import LaneAcquired, LaneWait, RunEnd, RunStart
from .exhaustion import merge_candidate_results_for_exhaustion
from .lane_policy import (
    resolve_embedded_run_session_queue_priority,
    resolve_global_lane,
    resolve_run_lane_timeout_s,
    resolve_session_lane,
)
from .lanes import LaneTimeoutError
from .live_run import live_run_scope
from .outcome import build_agent_run_terminal_outcome
from .prompt import resolve_run_prompt
from .reply_payload import ReplyPayload
from .request import RunErrorInfo, RunRequest, RunResult
from .run_result import (
    after_backend_error,
    classify_candidate_result,
    final_result,
    result_from_candidate,
    result_from_exhausted_chain,
    result_from_failover_error,
    storage_failure,
)
from .run_state import RunEventCallback, RunState
from .services import RunHost
from .steering import (
    SteeringLease,
    lease_pending_agent_steering_items,
    prepend_agent_steering_prompt,
    release_leased_agent_steering_items,
)
from .steering_ack import ack_steering_lease_with_retry
from .task_group_body import DeferredTasks, as_task_group_body, group_free

__all__ = ["run_embedded_agent"]


async def run_embedded_agent(
    runtime: RunHost, request: RunRequest, *, on_event: RunEventCallback | None = None
) -> RunResult:
    """Run one agent turn for ``request``; see the module docstring. Provider failures end
    as an error outcome with an error payload, never as an exception, and so do failures of
    a backend or of the runtime's own storage (``run_result.storage_failure``); bad input (an
    unknown model, an invalid session id) raises ``ConfigurationError``/``ValueError`` up
    front."""
    run = _Run(runtime, request, on_event)
    return await run.execute()


class _Run(RunState):
    """One run; the methods are its phases (the state is ``RunState``)."""

    #: the result the model chain produced, before the cleanup (steering ack, session
    #: check-in, lane release) that may still fail
    reached: RunResult | None = None

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
        except (PluginBackendError, OSError) as exc:
            failed, self.claim_key = _backend_failure(exc), False
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
        self.prompt = resolve_run_prompt(
            self.runtime, config, request, self.model, self.thinking_level
        )
        self.system_prompt = self.prompt.system_prompt
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
            except (PluginBackendError, OSError) as exc:
                failed = _backend_failure(exc)
        request = self.request
        if self.wants(RunStart.type):
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
                result = final_result(
                    self,
                    status="error",
                    error=RunErrorInfo("blocked", f"run blocked{who}: {block.reason}"),
                    stop_reason="hook_block",
                    payloads=[ReplyPayload(text=block.reason, is_error=True)],
                )
            elif (claimed := self._cron_reply_claim()) is not None:
                result = claimed
            else:
                result = await self._in_lanes()
        except LaneTimeoutError as exc:
            result = final_result(
                self,
                status="timeout",
                error=RunErrorInfo("lane_timeout", str(exc)),
                timeout_phase="provider",
                payloads=[ReplyPayload(text=f"⚠️ {exc}", is_error=True)],
            )
        except (PluginBackendError, OSError) as exc:
            result = after_backend_error(self, _backend_failure(exc), self.reached)
        except BaseExceptionGroup as group:
            failed = _lone_backend_error(group)
            if failed is None:
                raise
            result = after_backend_error(self, failed, self.reached)
        finally:
            if result is None and self.wants(RunEnd.type):
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
        if self.wants(RunEnd.type):
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

    def _cron_reply_claim(self) -> RunResult | None:
        """A cron run a ``before_agent_reply`` plugin answered itself (``cron_reply``)."""
        request = self.request
        if not offers_before_agent_reply(request.trigger):
            return None
        claim, _plugin = self.hooks.before_agent_reply(
            session_id=self.session_id,
            session_key=self.session_key,
            prompt=request.prompt,
            provider=self.model.provider,
            model=self.model.id,
            trigger=request.trigger,
        )
        if claim is None:
            return None
        payloads = [] if claim.text is None else [ReplyPayload(text=claim.text)]
        return final_result(self, status="ok", stop_reason="hook_reply", payloads=payloads)

    async def _in_lanes(self) -> RunResult:
        request = self.request
        priority = resolve_embedded_run_session_queue_priority(
            request.trigger, request.input_provenance
        )
        lane_timeout_s = resolve_run_lane_timeout_s(self.timeout_s)
        session_lane = resolve_session_lane(self.session_key or self.session_id)
        global_lane = resolve_global_lane(request.lane)
        services = self.services
        lanes = services.lanes
        await services.wait_for_session_maintenance(self.session_id)
        for fault in services.take_maintenance_faults(self.session_id):
            self._on_plugin_fault(fault)  # raised in the background: reported on this run
        waits, acquires = self.wants(LaneWait.type), self.wants(LaneAcquired.type)
        if waits:
            await self.emit(LaneWait(session_lane, "session", priority))
        async with lanes.hold(
            session_lane, capacity=1, priority=priority, timeout_s=lane_timeout_s
        ) as session_lease:
            if acquires:
                await self.emit(
                    LaneAcquired(session_lane, "session", session_lease.waited_s * 1000)
                )
            if waits:
                await self.emit(LaneWait(global_lane, "global", priority))
            async with lanes.hold(
                global_lane,
                capacity=self.config.agent.max_concurrent,
                priority=priority,
                timeout_s=lane_timeout_s,
            ) as global_lease:
                if acquires:
                    await self.emit(
                        LaneAcquired(global_lane, "global", global_lease.waited_s * 1000)
                    )
                self.start_heartbeats(leases=(session_lease, global_lease))
                try:
                    return await self._with_session()
                finally:
                    self.heartbeats, self.held_leases = (), ()

    async def _with_session(self) -> RunResult:
        services = self.services
        self.engine = await self.runtime.resolve_context_engine()
        # asked before the session is opened: did it exist before this process saw it?
        bootstrap_due = await session_needs_bootstrap(self.engine, services, self.session_id)
        session = await check_out_session(self, os.getcwd())
        self.session = session
        self.start_leaf_id = session.get_leaf_id()
        try:
            if self.session_key:
                await services.session_index.bind(self.session_key, self.session_id)
            if bootstrap_due:
                await bootstrap_context_engine(self.engine, session, session_key=self.session_key)
            lease = await self._lease_steering()
            result: RunResult | None = None
            try:
                if group_free():  # asyncio: a group only for a task the run starts
                    async with live_run_scope(self):
                        result = self.reached = await as_task_group_body(self._deferring_chain())
                else:
                    async with live_run_scope(self), anyio.create_task_group() as tg:
                        self.task_group = tg
                        result = self.reached = await self._fallback_chain()
            finally:
                if lease is not None:
                    with anyio.CancelScope(shield=True):
                        await self._settle_steering(lease, result)
            assert result is not None
            if result.ok:
                await maintain_after_turn(
                    self.engine,
                    self.current_session(),
                    services,
                    session_key=self.session_key,
                    token_budget=None,
                )
            return result
        finally:
            self.task_group = None
            # the run may have moved to a compaction successor; a failure: a cleanup failure
            checked = self.session or session
            if checkin_never_suspends(self, checked):  # memory sessions: nothing to shield
                await check_in_session(self, checked)
            else:
                with anyio.CancelScope(shield=True):
                    await check_in_session(self, checked)

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
        """Ack on success (retried: ``steering_ack``); otherwise hand the items back for the
        next turn (none is lost; one is delivered twice only when every ack try failed)."""
        store = self.services.steering_store
        if result is not None and result.ok:
            await ack_steering_lease_with_retry(
                store,
                lease,
                now_ms=lambda: time.time() * 1000,
                scale=self.runtime.retry_backoff_scale,
            )
        else:
            error = result.error.message if result is not None and result.error else "run failed"
            await release_leased_agent_steering_items(store, lease, error=error)

    async def _deferring_chain(self) -> RunResult:
        """The model chain, its fire-and-forget tasks run when it has answered."""
        self.task_group = deferred = DeferredTasks()
        try:
            result = await self._fallback_chain()
        except BaseException:
            deferred.drop()
            raise
        await deferred.run_pending()
        return result

    async def _fallback_chain(self) -> RunResult:
        try:
            chain = await run_with_model_fallback(
                self.candidates,
                self._run_candidate,
                classify=self.classify,
                classify_result=self._classify_result,
                merge_exhausted_result=merge_candidate_results_for_exhaustion,
                emit=self.emit,
                fallback_configured=self.fallback_configured,
            )
        except RunFailoverError as exc:
            return result_from_failover_error(self, exc, exc)
        except FailoverExhaustedError as exc:
            last = exc.__cause__ if isinstance(exc.__cause__, RunFailoverError) else None
            return result_from_failover_error(self, exc, last)
        except ProviderError as exc:
            return result_from_failover_error(self, exc, None)
        if chain.outcome == "exhausted":
            return result_from_exhausted_chain(self, chain.result, candidates=len(chain.attempts))
        return result_from_candidate(self, chain.result)

    def _run_candidate(self, candidate: ModelCandidate) -> Awaitable[CandidateResult]:
        # not a coroutine of its own: the loop's (one frame fewer held while the run waits)
        return ModelAttemptLoop(self, candidate).execute()

    def _classify_result(self, result: CandidateResult, candidate: ModelCandidate) -> Any:
        """``classify_candidate_result`` for this run (a bound method: no partial per run)."""
        return classify_candidate_result(self, result, candidate)


def _backend_failure(exc: PluginBackendError | OSError) -> PluginBackendError:
    """A backend's failure as the run's error: a plugin backend's as it is, an ``OSError``
    of the runtime's own storage as ``storage_failure`` makes it; any other ``OSError`` (a
    timeout) is raised again, as before."""
    if isinstance(exc, PluginBackendError):
        return exc
    failure = storage_failure(exc)
    if failure is None:
        raise exc
    return failure


def _lone_backend_error(group: BaseExceptionGroup[Any]) -> PluginBackendError | None:
    """The one ``PluginBackendError`` a task group wrapped (or the one storage ``OSError``,
    as ``storage_failure`` makes it), if that is all it holds."""
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
    return storage_failure(leaves[0]) if len(leaves) == 1 else None
