"""``PluginGuard``: the one place a plugin's exception is caught, attributed and counted.

Every plugin call site in the host (hooks, registered components, backends) asks the guard
``admits(plugin, unit)`` before calling, reports ``fault(...)`` when the plugin raised and
``succeeded(...)`` when it returned. The guard keeps a circuit breaker per *unit* (see
``breaker``), records every fault, hands it to the persisted record, and tells the run that is
going (``fault_scope``) so the run can put ``plugin_fault``/``plugin_quarantined`` events on its
stream and list the faults on its result.

The breaker unit is ``(plugin, unit)``: ``unit`` is the hook name for hook implementations
(``on_agent_event``, ``before_agent_run``, ``classify_failover`` ...) and ``<slot>:<name>`` for a
registered component (``stream_repairer:fix-json``, ``tool_call_format:harmony`` ...). So a plugin
whose event observer is broken keeps its working classifier, and one broken repairer does not
take the same plugin's other repairers out of service.

This module sits below the policy packages (``repair/``, ``transcript/``, ``failover/``): they may
use the guard without importing the ``Runtime``.
"""

from __future__ import annotations

import contextvars
import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from ..redaction import package_logger
from .breaker import (
    BreakerPolicy,
    BreakerState,
    BreakerStep,
    breaker_admit,
    breaker_fault,
    breaker_success,
)

__all__ = [
    "FaultListener",
    "FaultSink",
    "PluginFault",
    "PluginGuard",
    "PluginQuarantine",
    "component_unit",
    "fault_scope",
]

logger = package_logger(logging.getLogger("openclaw_runtime.plugins"))

#: Error texts are cut to this many characters (a plugin may raise with a huge message).
ERROR_TEXT_LIMIT = 1_000
#: Faults kept in memory per runtime (oldest dropped); the persisted record keeps counts.
MAX_FAULTS_KEPT = 1_000


@dataclass(frozen=True, slots=True)
class PluginFault:
    """A plugin raised: which plugin, in which hook (and unit), what, when (epoch seconds),
    and whether this fault quarantined it (opened its breaker)."""

    plugin: str | None
    hook: str
    error: str
    at: float
    unit: str | None = None
    quarantined: bool = False

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``RunResult.to_dict``, ``openclaw-runtime plugins``)."""
        return {
            "plugin": self.plugin,
            "hook": self.hook,
            "unit": self.unit or self.hook,
            "error": self.error,
            "at": self.at,
            "quarantined": self.quarantined,
        }


@dataclass(frozen=True, slots=True)
class PluginQuarantine:
    """A unit whose breaker is open (or half-open): calls to it are skipped."""

    plugin: str | None
    unit: str
    phase: str
    trips: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {"plugin": self.plugin, "unit": self.unit, "phase": self.phase, "trips": self.trips}


class FaultSink(Protocol):
    """Where faults are kept beyond the process (``FaultRecord``)."""

    def add(self, fault: PluginFault) -> None: ...


FaultListener = Callable[[PluginFault], None]


class _FaultRelay:
    """What the context variable holds: the scope's listener until the scope ends.

    Copies of a context outlive the block that set them (asyncio keeps a cancelled timer's
    handle, and its context, until the timer's due time: every deadline a run's cancel scopes
    set), so the variable must not hold the listener itself: a bound method of a run would
    keep the finished run, its session and its messages alive for as long. The scope cuts
    the relay loose when it ends; a fault raised later in a task that outlived the scope
    goes nowhere, as it would with no scope."""

    __slots__ = ("listener",)

    def __init__(self, listener: FaultListener) -> None:
        self.listener: FaultListener | None = listener


_LISTENER: contextvars.ContextVar[_FaultRelay | None] = contextvars.ContextVar(
    "openclaw_runtime_plugin_fault_listener", default=None
)


class fault_scope:
    """Send the faults raised in this context (and the tasks it starts) to ``listener``.

    A run opens one around its whole life, so a fault in a stream repairer or an observer
    deep inside the agent loop still lands on that run's events and result. When the block
    ends, the listener is dropped (``_FaultRelay``): nothing left over keeps it alive.

    A small class rather than a generator context manager (every run enters one): the
    same steps in the same order, without a generator and its wrapper held for the run.
    The context variable holds the relay, never this object (which holds the token, whose
    context holds the variable's value: that would be a reference cycle).
    """

    __slots__ = ("_relay", "_token")

    def __init__(self, listener: FaultListener) -> None:
        self._relay = _FaultRelay(listener)
        self._token: contextvars.Token[_FaultRelay | None] | None = None

    def __enter__(self) -> None:
        self._token = _LISTENER.set(self._relay)

    def __exit__(self, *_exc: object) -> None:
        self._relay.listener = None
        token = self._token
        if token is not None:
            self._token = None
            _LISTENER.reset(token)


def component_unit(slot: str, name: str) -> str:
    """The breaker unit of a registered component: ``<slot>:<name>``."""
    return f"{slot}:{name}"


def _error_text(exc: BaseException | str) -> str:
    text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    return text if len(text) <= ERROR_TEXT_LIMIT else text[: ERROR_TEXT_LIMIT - 1] + "…"


class PluginGuard:
    """Breakers and faults of one runtime's plugins (see the module docstring)."""

    def __init__(
        self,
        policy: BreakerPolicy | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        redact: Callable[[str], str] | None = None,
        sink: FaultSink | None = None,
    ) -> None:
        self.policy = policy or BreakerPolicy()
        self.clock = clock
        self.wall_clock = wall_clock
        self.redact = redact or (lambda text: text)
        self.sink = sink
        #: Every fault this runtime saw, oldest first.
        self.faults: list[PluginFault] = []
        self._breakers: dict[tuple[str | None, str], BreakerState] = {}

    # the call protocol ---------------------------------------------------------------------

    def admits(self, plugin: str | None, unit: str) -> bool:
        """Whether ``plugin``'s ``unit`` may be called now (False while quarantined)."""
        key = (plugin, unit)
        state = self._breakers.get(key)
        if state is None:
            return True
        admitted, new_state = breaker_admit(state, self.clock(), self.policy)
        self._breakers[key] = new_state
        if admitted and new_state.phase == "half_open":
            logger.info("plugin %r %s: cool-off over, one trial call", plugin, unit)
        return admitted

    def untouched(self, plugin: str | None, unit: str) -> bool:
        """Whether ``plugin``'s ``unit`` has no breaker yet: ``admits`` would say yes and
        ``succeeded`` do nothing (a read without either's side effects)."""
        return (plugin, unit) not in self._breakers

    def succeeded(self, plugin: str | None, unit: str) -> None:
        """``plugin``'s ``unit`` returned normally (closes a half-open breaker)."""
        key = (plugin, unit)
        state = self._breakers.get(key)
        if state is not None and state.phase == "half_open":
            self._breakers[key] = breaker_success(state)
            logger.warning("plugin %r %s: trial call succeeded, back in service", plugin, unit)

    def fault(
        self,
        plugin: str | None,
        hook: str,
        exc: BaseException | str,
        *,
        unit: str | None = None,
        quarantine: bool = False,
    ) -> PluginFault:
        """Record that ``plugin`` raised ``exc`` in ``hook``; the caller skips the plugin.

        ``quarantine=True`` opens the unit's breaker at once (a context engine is taken out
        of service at its first failure, by its proxy's own rules).
        """
        unit = unit or hook
        key = (plugin, unit)
        now = self.clock()
        before = self._breakers.get(key, BreakerState())
        if quarantine:
            step = BreakerStep(
                BreakerState("open", (now,), opened_at=now, trips=before.trips + 1),
                tripped=before.phase == "closed" or before.phase == "half_open",
            )
        else:
            step = breaker_fault(before, now, self.policy)
        self._breakers[key] = step.state
        fault = PluginFault(
            plugin,
            hook,
            self.redact(_error_text(exc)),
            self.wall_clock(),
            unit,
            quarantined=step.tripped,
        )
        self.faults.append(fault)
        if len(self.faults) > MAX_FAULTS_KEPT:
            del self.faults[: len(self.faults) - MAX_FAULTS_KEPT]
        logger.warning(
            "plugin %r failed in %s (%s): %s%s",
            plugin,
            hook,
            unit,
            fault.error,
            "; quarantined for this process" if step.tripped else "",
        )
        if isinstance(exc, BaseException) and logger.isEnabledFor(logging.DEBUG):
            # the traceback helps the plugin's author; redacted like the error text
            trace = "".join(traceback.format_exception(exc))
            logger.debug("plugin %r raised in %s:\n%s", plugin, hook, self.redact(trace))
        if self.sink is not None:
            try:
                self.sink.add(fault)
            except Exception:  # the record is best effort; the run must not notice
                logger.warning("could not persist the plugin fault record", exc_info=True)
        relay = _LISTENER.get()
        listener = None if relay is None else relay.listener
        if listener is not None:
            try:
                listener(fault)
            except Exception:  # pragma: no cover - listeners only queue
                logger.warning("plugin fault listener raised", exc_info=True)
        return fault

    def call(
        self,
        plugin: str | None,
        hook: str,
        fn: Callable[..., Any],
        *args: Any,
        unit: str | None = None,
        default: Any = None,
        **kwargs: Any,
    ) -> Any:
        """``fn(*args, **kwargs)`` behind the breaker: ``default`` when skipped or raising."""
        unit = unit or hook
        if not self.admits(plugin, unit):
            return default
        try:
            result = fn(*args, **kwargs)
        except Exception as exc:
            self.fault(plugin, hook, exc, unit=unit)
            return default
        self.succeeded(plugin, unit)
        return result

    # introspection -------------------------------------------------------------------------

    def state(self, plugin: str | None, unit: str) -> BreakerState:
        """The breaker of one unit (closed when it never failed)."""
        return self._breakers.get((plugin, unit), BreakerState())

    def quarantines(self) -> list[PluginQuarantine]:
        """Every unit whose calls are being skipped."""
        return [
            PluginQuarantine(plugin, unit, state.phase, state.trips)
            for (plugin, unit), state in self._breakers.items()
            if state.quarantined
        ]

    def reset(self, plugin: str | None = None) -> None:
        """Close every breaker (of ``plugin``, or all) and forget this process's faults."""
        if plugin is None:
            self._breakers.clear()
            self.faults.clear()
            return
        for key in [k for k in self._breakers if k[0] == plugin]:
            del self._breakers[key]
        self.faults[:] = [f for f in self.faults if f.plugin != plugin]
