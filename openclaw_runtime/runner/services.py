"""What a run needs from its host, as types the runner owns: ``RunServices`` and ``RunHost``.

The runner reaches shared state only through the five backend protocols (``backends``) and
asks its host only for what ``RunHost`` names (config, hooks, models, providers, the context
engine). The ``Runtime`` is one such host; the runner never imports it, which is what keeps
the layers pointing down (runner ← Runtime) with no import circle.

``RunServices`` holds the five backends and the sessions kept open between turns. Backends
are built on first use, from the host's factory: a plugin backend whose factory fails fails the
run that needed it (as a run error naming the plugin), not every run that did not.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Protocol, cast

import anyio

# ``backends``, ``failover`` and ``transcript`` are package faces: a name read through them
# loads on first read, so ``typing.get_type_hints`` resolves these annotations while the
# start-up path (``Runtime()``) loads none of those modules.
import openclaw_runtime.backends as backends
import openclaw_runtime.failover as failover
import openclaw_runtime.transcript as transcript

from .._exceptions import OpenClawRuntimeError
from .._registry import Registration
from .._types import RunBlock
from ..backends import BACKEND_KINDS
from ..config import RuntimeConfig
from ..containment import PluginFault
from ..events import Event
from ..llm import Model, StreamFn
from ..providers.registry import ModelRegistry
from .cron_reply import ReplyClaim
from .finalize import FinalizeDecision
from .live import LiveRunRegistry

__all__ = ["RunHooks", "RunHost", "RunServices"]


class RunHooks(Protocol):
    """The plugin calls a run makes (``Runtime.hooks``; every call guarded by the host)."""

    @property
    def observes_events(self) -> bool: ...

    def before_agent_run(
        self,
        *,
        session_id: str | None,
        session_key: str | None,
        prompt: str,
        provider: str,
        model: str,
        trigger: str,
    ) -> tuple[RunBlock | None, str | None]: ...

    def on_agent_event(self, event: Event, session_id: str | None) -> None: ...

    def before_agent_finalize(self, **kwargs: Any) -> FinalizeDecision: ...

    def before_agent_reply(self, **kwargs: Any) -> tuple[ReplyClaim | None, str | None]: ...

    def classify_failover(
        self, signal: failover.FailoverSignal
    ) -> tuple[failover.FailoverClassification | None, str | None]: ...

    def validate_replay_turns(
        self, messages: list[Any], policy: transcript.TranscriptPolicy
    ) -> tuple[list[Any] | None, str | None]: ...

    def turn_validation_abstains(self, policy: transcript.TranscriptPolicy) -> bool: ...

    def record_fault(
        self,
        plugin: str | None,
        hook_name: str,
        exc: BaseException | str,
        *,
        unit: str | None = None,
        quarantine: bool = False,
    ) -> PluginFault: ...


class RunHost(Protocol):
    """Everything the runner asks of its host (the ``Runtime`` is one)."""

    @property
    def config(self) -> RuntimeConfig: ...

    @property
    def hooks(self) -> RunHooks: ...

    @property
    def services(self) -> RunServices: ...

    @property
    def env(self) -> Mapping[str, str] | None: ...

    @property
    def models(self) -> ModelRegistry: ...

    #: Context limits providers stated in overflow errors (``provider/model`` → tokens).
    @property
    def learned_context_windows(self) -> dict[str, int]: ...

    @property
    def retry_backoff_scale(self) -> float: ...

    def resolve_model(self, name: str | Model | None = None) -> Model: ...

    def forward_compat_template(self, ref: str) -> str | None: ...

    def stream_fn_for(self, model: Model, *, repair: bool = True) -> StreamFn: ...

    def transcript_sanitizers(self) -> list[Registration[Any]]: ...

    def prompt_sections(self) -> list[Registration[Any]]: ...

    async def resolve_context_engine(self, name: str | None = None) -> Any: ...


class RunServices:
    """The five backends a run uses and the sessions kept open between its turns.

    ``build(kind)`` makes the backend of one kind (``BACKEND_KINDS``); each is built once, on
    first use. ``RunServices.of(...)`` takes ready-made backends instead (tests, embedding).
    """

    def __init__(
        self,
        build: Callable[[str], Any],
        *,
        check: Callable[[], None] | None = None,
        max_open_sessions: int = 128,
    ) -> None:
        self._build = build
        self._check = check
        self._built: dict[str, Any] = {}
        self._open: OrderedDict[str, Any] = OrderedDict()
        self._maintenance: dict[str, anyio.Event] = {}
        #: (engine id, session id) pairs a context engine has seen in this process (bootstrap
        #: is due only at the first sight of a session that already existed)
        self.context_engine_sessions: set[tuple[str, str]] = set()
        #: plugin faults raised by background maintenance, for the session's next run
        self._maintenance_faults: dict[str, list[PluginFault]] = {}
        #: Sessions kept open between turns (parsed once, refreshed by a stat per turn).
        self.max_open_sessions = max_open_sessions
        #: The runs of this host that are live now, by session (``Runtime.steer`` & co.).
        self.live_runs = LiveRunRegistry()

    @classmethod
    def of(
        cls,
        *,
        lanes: backends.LaneBackend,
        auth_store: backends.AuthStore,
        steering_store: backends.SteeringStore,
        session_index: backends.SessionIndex,
        session_store: backends.SessionStore,
    ) -> RunServices:
        """Services over ready-made backends."""
        given: dict[str, Any] = {
            "lanes": lanes,
            "auth_store": auth_store,
            "steering_store": steering_store,
            "session_index": session_index,
            "session_store": session_store,
        }
        return cls(given.__getitem__)

    def validate(self) -> None:
        """Check the selection up front (``check``: every configured backend name is
        registered), so a misconfigured kind fails before a run starts, whichever backend it
        would have reached first. Checked once; an error is raised again on every call."""
        if self._check is not None:
            self._check()
            self._check = None

    def backend(self, kind: str) -> Any:
        """The backend of ``kind``, built on first use."""
        built = self._built.get(kind)
        if built is None:
            if kind not in BACKEND_KINDS:
                raise KeyError(f"unknown backend kind {kind!r}; kinds: {', '.join(BACKEND_KINDS)}")
            built = self._built[kind] = self._build(kind)
        return built

    @property
    def lanes(self) -> backends.LaneBackend:
        """Session and global lanes."""
        return cast("backends.LaneBackend", self.backend("lanes"))

    @property
    def auth_store(self) -> backends.AuthStore:
        """The auth-profile ledger."""
        return cast("backends.AuthStore", self.backend("auth_store"))

    @property
    def steering_store(self) -> backends.SteeringStore:
        """Sub-agent results waiting for their requester's next turn."""
        return cast("backends.SteeringStore", self.backend("steering_store"))

    @property
    def session_index(self) -> backends.SessionIndex:
        """Session key → session id."""
        return cast("backends.SessionIndex", self.backend("session_index"))

    @property
    def session_store(self) -> backends.SessionStore:
        """Where transcripts live."""
        return cast("backends.SessionStore", self.backend("session_store"))

    # sessions kept open between turns ---------------------------------------------------------

    async def checkout_session(self, session_id: str, *, cwd: str) -> backends.Session:
        """An open session for a run: the one kept from the session's last turn (refreshed
        with whatever other processes appended), else opened from the store.

        A kept session whose ``refresh`` raises an ``OpenClawRuntimeError`` (its file removed,
        the lock not had in time) is closed and the session opened again; when that close
        fails too (its flush: lines a failed flush kept, still not written), the session is
        kept with them and the close's error raised, rather than dropped with its lines."""
        cached = self._open.pop(session_id, None)
        if cached is not None:
            try:
                await cached.refresh()  # first writes what a failed flush left buffered
            except OpenClawRuntimeError:
                try:
                    await cached.aclose()
                except BaseException:
                    self._open[session_id] = cached  # its lines stay for a later flush
                    raise
            except BaseException:
                self._open[session_id] = cached  # what it buffered stays for a later flush
                raise
            else:
                return cast("backends.Session", cached)
        return await self.session_store.open_or_create(session_id, cwd=cwd)

    async def checkin_session(self, session: backends.Session) -> None:
        """Keep a session open for its next turn (least recently used ones are closed). A
        session whose flush fails is kept all the same (and the failure raised): the lines
        it buffered stay with it, and the next turn's ``refresh`` writes them."""
        try:
            await session.flush()
        except BaseException:
            self.keep_session(session)
            raise
        key = session.session_id
        previous = self._open.pop(key, None)
        if previous is not None and previous is not session:
            await previous.aclose()
        self._open[key] = session
        while len(self._open) > self.max_open_sessions:
            _, oldest = self._open.popitem(last=False)
            await oldest.aclose()

    def keep_session(self, session: backends.Session) -> None:
        """Keep ``session`` open as the most recently used one, closing nothing (a failed
        flush left lines buffered in it: the next checkout's ``refresh`` writes them)."""
        self._open.pop(session.session_id, None)
        self._open[session.session_id] = session

    def closed_by_checkin(self, session: backends.Session) -> list[Any]:
        """The sessions ``checkin_session(session)`` would close, in its order (the one kept
        under the same id before, then the least recently used over the limit); it closes
        nothing else. Asked before a check-in that would rather know (``checkin``)."""
        key = session.session_id
        previous = self._open.get(key)
        closed = [previous] if previous is not None and previous is not session else []
        # after the check-in: the others in their order, then ``session``
        over = len(self._open) - (previous is not None) + 1 - self.max_open_sessions
        for name, kept in self._open.items():
            if over <= 0:
                break
            if name != key:
                closed.append(kept)
                over -= 1
        if over > 0:  # a limit below one: the session itself goes too
            closed.append(session)
        return closed

    async def close_sessions(self) -> None:
        """Close every session kept open (flushing what they buffered)."""
        while self._open:
            _, session = self._open.popitem()
            await session.aclose()

    async def close_backends(self) -> None:
        """Close the backends built so far that hold resources (those with ``aclose()``, e.g.
        a plugin's connection pool); they are built again if used afterwards."""
        while self._built:
            _, backend = self._built.popitem()
            aclose = getattr(backend, "aclose", None)
            if aclose is not None:
                await aclose()

    async def wait_for_session_maintenance(self, session_id: str) -> None:
        """Wait for deferred transcript maintenance of ``session_id`` to finish, so the next
        turn reads what it wrote."""
        pending = self._maintenance.get(session_id)
        if pending is not None:
            await pending.wait()

    def maintenance_pending(self, session_id: str) -> bool:
        """Whether background maintenance of ``session_id`` is announced and not done."""
        return session_id in self._maintenance

    def park_maintenance_faults(self, session_id: str, faults: list[PluginFault]) -> None:
        """Keep the plugin faults a background pass raised for the session's next run."""
        if faults:
            self._maintenance_faults.setdefault(session_id, []).extend(faults)

    def take_maintenance_faults(self, session_id: str) -> list[PluginFault]:
        """The faults parked for ``session_id`` (each handed out once)."""
        return self._maintenance_faults.pop(session_id, [])

    async def wait_for_all_maintenance(self) -> None:
        """Wait until no background maintenance is pending (shutdown)."""
        while self._maintenance:
            await next(iter(self._maintenance.values())).wait()

    def defer_session_maintenance(self, session_id: str) -> Callable[[], None]:
        """Announce background maintenance of ``session_id``; call the returned function
        when it is done. Runs of that session wait for it before queueing."""
        event = anyio.Event()
        self._maintenance[session_id] = event

        def done() -> None:
            event.set()
            if self._maintenance.get(session_id) is event:
                del self._maintenance[session_id]

        return done
