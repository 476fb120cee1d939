"""``RunState``: the state of one run and the services its attempt loop calls.

``run_embedded_agent`` (``run``) drives a run through its phases; the attempt loop of each
model candidate (``attempt_loop``) works on the same run. Both take this class, so neither
imports the other's module: the run's fields (ids, session, model chain, limits, usage, the
plugin faults it raised), its event path (``emit``: the caller's callback, the plugins'
observers, then the faults not yet reported), its lane heartbeat, and the session work an
attempt asks for (planning the attempt's input, setting a failed turn aside, compaction and
truncation under the run's timeout) live here.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from ..auth import UnresolvedCredentialError
from ..containment import PluginFault, component_unit
from ..context.compaction import SummaryModel
from ..context.engine import CompactResult
from ..events import Event
from ..failover import FailoverClassification, FailoverSignal, ModelCandidate
from ..failover.events import redact_secret_text
from ..llm import Model, ThinkingLevel
from ..prompt.plan import RunPrompt
from ..redaction import package_logger, redact_event
from .attempt import RECORDED_KINDS, AttemptOutcome
from .attempt_input import AttemptInputPlan, plan_attempt_input
from .auth_controller import AuthController, AuthProfilesUnavailableError
from .checkin import flush_session, session_flush_error
from .compaction_lifecycle import (
    PreCompactionSnapshot,
    defer_budget_compaction,
    follow_compaction_successor,
    wants_deferred_budget_compaction,
)
from .event_kinds import ALL_EVENT_KINDS, wanted_event_kinds
from .events import (
    CompactionEnd,
    CompactionStart,
    PluginFaultRaised,
    PluginQuarantined,
    ToolResultsTruncated,
)
from .live_follow import follow_successor, live_inbox_of
from .reply_stream import reply_observer_for
from .request import RunRequest
from .run_models import RunEntryModels, RunFacts, messages_of, run_facts_of
from .run_usage import UsageAccumulator
from .session_ops import (
    compact_with_engine,
    set_aside_failed_tail,
    set_aside_orphan_user_message,
    truncate_oversized_tool_results_in_session,
)

if TYPE_CHECKING:
    from ..backends import HeldLane, Session
    from .live import LiveRunHandle
    from .services import RunHost
    from .task_group_body import DeferredTasks

__all__ = ["DEFAULT_RESERVE_TOKENS", "RunEventCallback", "RunState"]

#: ``RunState.run_messages``' memo: (what they were read from, the entries, their facts)
_MessagesMemo = tuple[tuple[Any, ...], list[dict[str, Any]], "RunFacts | None"]

logger = package_logger(logging.getLogger("openclaw_runtime.runner"))

RunEventCallback = Callable[[Event], Awaitable[None] | None]

#: Completion tokens kept free when routing a prompt (capped by the model's max tokens).
DEFAULT_RESERVE_TOKENS = 16_384


class RunState:
    """State of one run, and what its attempts ask of it; ``run._Run`` adds the phases."""

    # resolved at the run's entry (``run._Run._resolve_entry``)
    session_id: str
    session_key: str | None
    claim_key: bool
    model: Model
    candidates: list[ModelCandidate]
    thinking_level: ThinkingLevel
    timeout_s: float | None
    idle_timeout_s: float | None
    system_prompt: str
    prompt: RunPrompt

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
        self.heartbeats: Sequence[Callable[[], None]] = ()
        #: the lanes' leases held (beaten after ``heartbeats``; no bound method kept per lane)
        self.held_leases: Sequence[HeldLane] = ()
        self.run_entry_ids: set[str] = set()
        self.prompt_entry_id: str | None = None
        self.prompt_message: Any = None
        self.observes = self.hooks.observes_events
        #: the event kinds someone listens to (``event_kinds``): the rest is not handed out
        self.wanted_kinds = (
            ALL_EVENT_KINDS
            if self.observes
            else wanted_event_kinds(() if on_event is None else (on_event,))
        )
        #: what the kernel must build and emit (``agent.loop.EventGate``): what the attempt
        #: records, the reply observer reads and a listener wants — every kind while a plugin
        #: fault waits to be reported (any event reports it: ``emit``)
        self.needed_kinds: frozenset[str] = self._listened_kinds()
        #: where fire-and-forget work of the run starts (``task_group_body``)
        self.task_group: anyio.abc.TaskGroup | DeferredTasks | None = None
        self.fallback_configured = False
        self.api_keys: dict[str, str] = {}
        self.base_prompt = request.prompt
        self.start_leaf_id: str | None = None
        #: the run's live handle (queues, abort) while it holds its session (``live_run``)
        self.live: LiveRunHandle | None = None
        #: transcript entries of the steered and follow-up messages the run delivered
        self.live_entry_ids: set[str] = set()
        self._last_beat = 0.0
        self._emit_faults = 0
        #: why the last compaction ran out of the run's time (None: it did not); the attempt
        #: loop ends the run on its timeout when a recovery compaction did
        self.compaction_timeout: str | None = None
        #: a compaction of this run is running (the pre-compaction snapshot's guard)
        self.compacting = False
        #: Plugin faults raised during this run (``RunResult.faults``); ``_unreported`` are
        #: the ones not yet on the event stream.
        self.faults: list[PluginFault] = []
        self._unreported: list[PluginFault] | None = None  # made with the first fault
        self._reporting = False
        #: ``run_result.success_payloads``' last answer and what it was built from
        self.payload_memo: tuple[tuple[Any, ...], list[Any]] | None = None
        #: ``run_messages``' last entries: (key, entries, their facts or None)
        self.run_messages_memo: _MessagesMemo | None = None
        #: the run's own models of its entries (``run_messages``), parsed once per entry
        self.entry_models = RunEntryModels()

    # events -------------------------------------------------------------------------------

    def _listened_kinds(self) -> frozenset[str]:
        """``needed_kinds`` with no fault waiting (computed at the run's start)."""
        wanted = self.wanted_kinds
        if wanted is ALL_EVENT_KINDS:
            return ALL_EVENT_KINDS
        return RECORDED_KINDS | self.reply_observer.observed_kinds | wanted

    def _on_plugin_fault(self, fault: PluginFault) -> None:
        self.faults.append(fault)
        if self._unreported is None:
            self._unreported = []
        self._unreported.append(fault)
        self.needed_kinds = ALL_EVENT_KINDS  # the next event, whatever it is, reports it

    def classify(self, signal: FailoverSignal) -> FailoverClassification | None:
        """Classify through the runtime's ``classify_failover`` plugin chain (faults are
        skipped and recorded by the runtime): ``failover.hook_classifier``, as a method."""
        classification, _plugin = self.hooks.classify_failover(signal)
        return classification

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
            if not self._unreported:
                self.needed_kinds = self._listened_kinds()

    def wants(self, kind: str) -> bool:
        """Does a listener want events of ``kind``? (Else the runner need not build one.)"""
        return kind in self.wanted_kinds

    async def emit(self, event: Event) -> None:
        """To the caller's callback and the plugins' ``on_agent_event`` (when one of them
        wants its kind), followed by any plugin faults raised since the last event."""
        observer = self.reply_observer
        if event.type in observer.observed_kinds:  # ``observer.observes(event.type)``
            await observer.observe(event)
        if event.type in self.wanted_kinds:
            await self._dispatch(event)
        if self._unreported and event.type != "run_end":
            await self.report_faults()

    async def _dispatch(self, event: Event) -> None:
        """To the caller's callback and the plugins' ``on_agent_event``; an observer that
        raises is skipped (the guard records it; it must not change the run). Run-level events
        are redacted here (streamed deltas are not: their error texts are masked at the source)."""
        if event.type not in self.wanted_kinds:
            return
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

    def start_heartbeats(
        self, beats: Sequence[Callable[[], None]] = (), leases: Sequence[HeldLane] = ()
    ) -> None:
        """The lanes were just granted (their timeouts run from now): beat them (``beats``,
        then each of ``leases``) from here on, the first time half a second from now like
        every later beat, not on the first event."""
        self.heartbeats = beats
        self.held_leases = leases
        self._last_beat = time.monotonic()

    def heartbeat(self) -> None:
        """Progress: push the lanes' deadlines out (at most every half second — every
        streamed token calls this, and moving a deadline reschedules a timer)."""
        now = time.monotonic()
        if now - self._last_beat < 0.5:
            return
        self._last_beat = now
        for beat in self.heartbeats:
            beat()
        for lease in self.held_leases:
            lease.heartbeat()

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
            last_is_live_message=leaf_id is not None and leaf_id in self.live_entry_ids,
        )
        if plan.drop_orphan:
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
        if self.live is not None:
            for message in self.live.delivered:
                entry_id = outcome.entry_ids.get(id(message))
                if entry_id is not None:
                    self.live_entry_ids.add(entry_id)
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

    def turns_abstain(self, policy: Any) -> bool:
        """``validate_turns`` would answer ``None`` with no effect now
        (``Hooks.turn_validation_abstains``): the pipeline may skip it."""
        return self.hooks.turn_validation_abstains(policy)

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
        """Compact through the context engine (directly: the run holds the lane); budget
        compaction may be deferred to background maintenance, and the engine may move the
        session to a successor (``compaction_lifecycle``)."""
        session = self.session
        assert session is not None
        count = self.total_compactions + 1
        await self.emit(CompactionStart(trigger=trigger, count=count, tokens_before=tokens))
        result: CompactResult | None = None
        unfinished = "compaction did not complete"
        self.compaction_timeout = None
        if wants_deferred_budget_compaction(self.engine, trigger):
            result = defer_budget_compaction(
                self.engine,
                self.services,
                session_id=self.session_id,
                session_key=self.session_key,
                token_budget=max(1, window - min(DEFAULT_RESERVE_TOKENS, model.max_tokens or 0)),
                current_token_count=tokens,
                summary_models=await self._summary_models(model),
                keep_recent_tokens=min(self.config.agent.keep_recent_tokens, max(1, window // 4)),
            )
            await self.emit(_compaction_end(trigger, result, unfinished))
            return result
        snapshot = PreCompactionSnapshot.capture(session, self._compaction_in_flight)
        self.compacting = True
        if self.live is not None:
            self.live.compacting = True
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
            self.compacting = False
            if deadline.cancelled_caught:
                self.compaction_timeout = f"compaction timed out after {self.timeout_s:g}s"
                result = CompactResult(
                    ok=False, compacted=False, reason=f"{self.compaction_timeout} (run timeout)"
                )
                await snapshot.restore_after_timeout(session, run=self)
            elif result is not None and result.successor is not None:
                successor, result = await follow_compaction_successor(
                    self.services, session, result, session_key=self.session_key
                )
                if successor is not None:
                    self._continue_on(successor)
                    session = successor
                    if self.live is not None:  # steer & co. follow the run to its new id
                        await follow_successor(
                            self.live,
                            self.services.live_runs,
                            live_inbox_of(self.services.steering_store),
                            successor.session_id,
                        )
            await flush_session(self, session, "compaction")
        except BaseException as exc:
            unfinished = f"compaction did not complete: {type(exc).__name__}: {exc}"
            raise
        finally:
            self.compacting = False
            if self.live is not None:
                self.live.compacting = False
            # every compaction_start is closed, whatever ended the compaction
            with anyio.CancelScope(shield=True):
                await self.emit(_compaction_end(trigger, result, unfinished))
        assert result is not None
        if result.compacted and trigger != "preemptive":
            self.total_compactions += 1
        self.heartbeat()
        return result

    def session_flush_error(self, exc: Exception, phase: str = "turn-end") -> Exception:
        """The run's error for a failed ``phase`` flush of its session (the turn end's:
        ``attempt._AttemptTurn.flush``)."""
        return session_flush_error(self, exc, phase)

    def current_session(self) -> Session:
        """The session the run is on now (a compaction successor once the engine moved it)."""
        assert self.session is not None
        return self.session

    def _compaction_in_flight(self) -> bool:
        # a pending background pass is not in flight: it waits for the lane this run holds
        return self.compacting

    def _continue_on(self, successor: Session) -> None:
        """The engine moved the conversation to ``successor``: the run goes on there."""
        self.session = successor
        self.session_id = successor.session_id
        self.start_leaf_id = successor.get_leaf_id()
        self.run_entry_ids = set()
        self.prompt_entry_id = None

    async def compact_bool(
        self, trigger: str, tokens: int | None, *, window: int, model: Model
    ) -> bool:
        """``compact`` reduced to "did it compact"."""
        return (await self.compact(trigger, tokens, window=window, model=model)).compacted

    async def truncate(self, window: int) -> int:
        """Cut oversized tool results on the branch; how many were cut."""
        session = self.session
        assert session is not None
        outcome = await truncate_oversized_tool_results_in_session(session, window, run=self)
        await self.emit(
            ToolResultsTruncated(outcome.truncated, outcome.rewritten_entries, outcome.reason)
        )
        return outcome.truncated

    def run_messages(self) -> list[Any]:
        """This run's messages still on the active branch (failed turns set aside excluded).

        Every read hands out the run's own models (``RunEntryModels``: parsed from the
        entries once per run, never the session's: the session's models are its history, and
        a caller editing a result's message must not change the next request); every caller
        gets its own list."""
        return messages_of(self._remembered()[1], self.entry_models.message_of)

    def run_facts(self) -> RunFacts:
        """What the run's messages say (``run_models.run_facts_of``: read from the entries'
        wire dicts, the last assistant message parsed only when asked for), remembered."""
        memo = self._remembered()
        if memo[2] is None:
            memo = self.run_messages_memo = (
                memo[0],
                memo[1],
                run_facts_of(memo[1], self.entry_models),
            )
        assert memo[2] is not None
        return memo[2]

    def _remembered(self) -> _MessagesMemo:
        """The run's message entries, remembered (``run_messages_memo``) under what they are
        read from — the session, its leaf, the run's entry set and its size, the leaf the run
        started at — and read again only when one of those changed (asked more than once as a
        run ends: the payloads, the result's facts)."""
        memo = self.run_messages_memo
        key = self._run_messages_key()
        if memo is None or not _same_key(memo[0], key):
            memo = self.run_messages_memo = (key, self.run_entries(), None)
        return memo

    def _run_messages_key(self) -> tuple[Any, ...]:
        session = self.session
        return (
            session,
            None if session is None else session.get_leaf_id(),
            self.run_entry_ids,
            len(self.run_entry_ids),
            self.start_leaf_id,
        )

    def run_entries(self) -> list[dict[str, Any]]:
        """This run's ``message`` entries still on the active branch, in order (not parsed)."""
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
                    out.append(entry)
            elif entry.get("id") == self.start_leaf_id:
                break
        out.reverse()
        return out

    def _read_run_messages(self) -> list[Any]:
        """The run's messages read afresh from the branch (no memo)."""
        return messages_of(self.run_entries(), self.entry_models.message_of)


def _same_key(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    # the session and the entry set by identity (another equal one is still another one)
    return old[0] is new[0] and old[2] is new[2] and old[1] == new[1] and old[3:] == new[3:]


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
