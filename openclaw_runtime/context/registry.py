"""Resolving the configured context engine, and the quarantine proxy around it.

A context engine is third-party code on the request path, so a broken one must never take a
run down. The slot resolves the engine named in config (falling back to the built-in
``legacy`` engine when it is unregistered, its factory raises, or it breaks the contract) and
wraps it in a proxy that, for every guarded method:

* raises at once if the call's ``abort_signal`` already fired (abort is the caller's intent);
* routes to the default engine's method once the engine is quarantined;
* on an exception that is not an abort: records the quarantine (first failure wins — it names
  the root cause, not follow-on fallback use) and falls back; ``compact`` and
  ``prepare_subagent_spawn`` re-raise instead, because their callers must know it failed.

Once quarantined, ``info`` reports the default engine, so engine-scoped logic downstream
stops attributing work to the broken one; an ``info`` that raises quarantines the engine too.
Every quarantine is handed to ``on_quarantine`` (the ``Runtime`` turns it into a plugin fault:
an event on the run, the persisted record, ``doctor``). Quarantines last for the runtime's life
unless cleared with ``clear_quarantine()``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .._exceptions import ComponentNotFoundError, ConfigurationError
from .._registry import ComponentRegistry
from ..abort import AbortError, is_abort_error
from ..redaction import package_logger
from .engine import (
    BootstrapResult,
    ContextEngineInfo,
    IngestBatchResult,
    IngestResult,
    MaintenanceResult,
    describe_context_engine_contract_error,
)
from .selection import resolve_effective_context_engine_id

__all__ = [
    "DEFAULT_CONTEXT_ENGINE_ID",
    "GUARDED_CONTEXT_ENGINE_METHODS",
    "ContextEngineFactoryContext",
    "ContextEngineQuarantine",
    "ContextEngineSlot",
    "QuarantineProxy",
    "context_engine_fallback_result",
]

logger = package_logger(logging.getLogger("openclaw_runtime.context"))

DEFAULT_CONTEXT_ENGINE_ID = "legacy"
DOWNGRADED_REASON = "context engine downgraded to legacy"
GUARDED_CONTEXT_ENGINE_METHODS = frozenset(
    {
        "bootstrap",
        "maintain",
        "ingest",
        "ingest_batch",
        "after_turn",
        "assemble",
        "compact",
        "prepare_subagent_spawn",
        "on_subagent_ended",
    }
)
_RETHROWING = frozenset({"compact", "prepare_subagent_spawn"})


@dataclass(frozen=True, slots=True)
class ContextEngineQuarantine:
    """An engine taken out of service: which method failed, why, when, whose it is."""

    engine_id: str
    operation: str
    reason: str
    failed_at: datetime
    owner: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``openclaw-runtime plugins`` shows it)."""
        out = {
            "engineId": self.engine_id,
            "operation": self.operation,
            "reason": self.reason,
            "failedAt": self.failed_at.isoformat(),
        }
        if self.owner:
            out["owner"] = self.owner
        return out


@dataclass(frozen=True, slots=True)
class ContextEngineFactoryContext:
    """What a factory may use to build its engine."""

    config: Any = None
    state_dir: str | None = None
    workspace_dir: str | None = None


def context_engine_fallback_result(method: str) -> Any:
    """What a guarded method returns when neither the engine nor the fallback can answer."""
    if method == "bootstrap":
        return BootstrapResult(bootstrapped=False, reason=DOWNGRADED_REASON)
    if method == "maintain":
        return MaintenanceResult(
            changed=False, bytes_freed=0, rewritten_entries=0, reason=DOWNGRADED_REASON
        )
    if method == "ingest":
        return IngestResult(ingested=False)
    if method == "ingest_batch":
        return IngestBatchResult(ingested_count=0)
    if method in ("after_turn", "prepare_subagent_spawn", "on_subagent_ended"):
        return None
    raise RuntimeError(f"No legacy fallback result for {method}")


class ContextEngineSlot:
    """One runtime's context-engine slot: registrations, resolved engines, quarantines."""

    def __init__(
        self,
        registry: ComponentRegistry[Callable[..., Any]],
        *,
        default_engine_id: str = DEFAULT_CONTEXT_ENGINE_ID,
        factory_context: ContextEngineFactoryContext | None = None,
        on_quarantine: Callable[[ContextEngineQuarantine], None] | None = None,
        owner_enabled: Callable[[str], bool] | None = None,
    ) -> None:
        self.registry = registry
        self.on_quarantine = on_quarantine
        #: Whether an engine's owner plugin is enabled; a disabled one means the default,
        #: silently (``context.selection``).
        self.owner_enabled = owner_enabled
        self.default_engine_id = default_engine_id
        self.factory_context = factory_context or ContextEngineFactoryContext()
        self._quarantines: dict[str, ContextEngineQuarantine] = {}
        self._default_engine: Any = None

    # quarantine ledger -------------------------------------------------------------------------

    def record_quarantine(
        self, engine_id: str, operation: str, error: BaseException | str, owner: str | None = None
    ) -> ContextEngineQuarantine:
        """Quarantine ``engine_id``; the first failure wins."""
        existing = self._quarantines.get(engine_id)
        if existing is not None:
            return existing
        reason = _reason_text(error)
        quarantine = ContextEngineQuarantine(engine_id, operation, reason, datetime.now(UTC), owner)
        self._quarantines[engine_id] = quarantine
        if self.on_quarantine is not None:
            try:
                self.on_quarantine(quarantine)
            except Exception:  # reporting must not turn a fallback into a crash
                logger.warning("context engine quarantine listener raised", exc_info=True)
        owner_suffix = f" owner={owner}" if owner else ""
        logger.error(
            'Context engine "%s"%s failed during %s: %s; quarantining it for this process and '
            'falling back to default engine "%s".',
            engine_id,
            owner_suffix,
            operation,
            reason,
            self.default_engine_id,
        )
        return quarantine

    def is_quarantined(self, engine_id: str) -> bool:
        """Whether ``engine_id`` is out of service."""
        return engine_id in self._quarantines

    def list_quarantines(self) -> list[ContextEngineQuarantine]:
        """Every quarantine, oldest first."""
        return sorted(self._quarantines.values(), key=lambda q: q.failed_at)

    def clear_quarantine(self, engine_id: str | None = None) -> None:
        """Put one engine (or all) back into service."""
        if engine_id is None:
            self._quarantines.clear()
        else:
            self._quarantines.pop(engine_id, None)

    # resolution --------------------------------------------------------------------------------

    async def resolve(self, name: str | None = None) -> Any:
        """The engine to use for ``name`` (config's ``context_engine``), already wrapped.

        Unregistered, failing or contract-breaking engines are quarantined and the default is
        returned; only a failure of the default engine itself raises.
        """
        engine_id = resolve_effective_context_engine_id(
            name, self.registry, self.owner_enabled, self.default_engine_id
        )
        if engine_id == self.default_engine_id:
            return await self.resolve_default()
        if self.is_quarantined(engine_id):
            return await self.resolve_default()
        if engine_id not in self.registry:
            available = ", ".join(self.registry.names()) or "(none)"
            self.record_quarantine(engine_id, "resolve", f"not registered (available: {available})")
            return await self.resolve_default()
        registration = self.registry.registration(engine_id)
        try:
            engine = await self._build(registration.component)
        except Exception as exc:
            self.record_quarantine(engine_id, "factory", exc, registration.plugin)
            return await self.resolve_default()
        try:
            problem = describe_context_engine_contract_error(engine_id, engine)
        except Exception as exc:  # an ``info`` property that raises
            self.record_quarantine(engine_id, "info", exc, registration.plugin)
            return await self.resolve_default()
        if problem is not None:
            self.record_quarantine(engine_id, "factory", problem, registration.plugin)
            return await self.resolve_default()
        return QuarantineProxy(engine, engine_id, registration.plugin, self)

    async def resolve_default(self) -> Any:
        """The default engine (built once); its failures are configuration errors."""
        if self._default_engine is not None:
            return self._default_engine
        try:
            factory = self.registry.get(self.default_engine_id)
        except ComponentNotFoundError as exc:
            raise ConfigurationError(
                f'Context engine "{self.default_engine_id}" is not registered. Available engines: '
                f"{', '.join(self.registry.names()) or '(none)'}"
            ) from exc
        engine = await self._build(factory)
        problem = describe_context_engine_contract_error(self.default_engine_id, engine)
        if problem is not None:
            raise ConfigurationError(problem)
        self._default_engine = engine
        return engine

    def fallback_info(self) -> ContextEngineInfo:
        """What a quarantined engine reports as its ``info``."""
        if self._default_engine is not None:
            info: ContextEngineInfo = self._default_engine.info
            return info
        name = (
            "Legacy Context Engine"
            if self.default_engine_id == "legacy"
            else f"{self.default_engine_id} Context Engine"
        )
        return ContextEngineInfo(id=self.default_engine_id, name=name)

    async def _build(self, factory: Callable[..., Any]) -> Any:
        # a factory with a required parameter gets the context; classes with optional
        # constructor arguments and no-arg factories are called bare
        try:
            takes_context = any(
                p.default is inspect.Parameter.empty
                and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                for p in inspect.signature(factory).parameters.values()
            )
        except (TypeError, ValueError):
            takes_context = False
        built = factory(self.factory_context) if takes_context else factory()
        if inspect.isawaitable(built):
            built = await built
        return built


class QuarantineProxy:
    """Every guarded method of an engine, behind the quarantine rules (see module doc)."""

    def __init__(
        self, engine: Any, engine_id: str, owner: str | None, slot: ContextEngineSlot
    ) -> None:
        self._engine = engine
        self._engine_id = engine_id
        self._owner = owner
        self._slot = slot

    @property
    def info(self) -> ContextEngineInfo:
        """The engine's info, or the default engine's once quarantined."""
        if self._slot.is_quarantined(self._engine_id):
            return self._slot.fallback_info()
        try:
            info: ContextEngineInfo = self._engine.info
        except Exception as exc:
            self._slot.record_quarantine(self._engine_id, "info", exc, self._owner)
            return self._slot.fallback_info()
        return info

    @property
    def engine_id(self) -> str:
        """The registered name this proxy resolves."""
        return self._engine_id

    @property
    def wrapped(self) -> Any:
        """The engine itself (for introspection only; calling it bypasses the guard)."""
        return self._engine

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._engine, name)
        if name in GUARDED_CONTEXT_ENGINE_METHODS and callable(value):
            return self._guarded(name, value)
        return value

    def _guarded(self, method_name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        async def call(params: Any) -> Any:
            signal = getattr(params, "abort_signal", None)
            if signal is not None and signal.aborted:
                raise _abort_error(signal)
            if self._slot.is_quarantined(self._engine_id):
                return await self._fallback(method_name, params)
            try:
                result = method(params)
                if inspect.isawaitable(result):
                    result = await result
                return result
            except Exception as exc:
                if _is_abort_rejection(exc, signal):
                    raise  # the caller asked for it; the engine is not unstable
                self._slot.record_quarantine(self._engine_id, method_name, exc, self._owner)
                if method_name in _RETHROWING:
                    raise
                try:
                    return await self._fallback(method_name, params)
                except Exception:
                    raise exc from None

        call.__name__ = method_name
        return call

    async def _fallback(self, method_name: str, params: Any) -> Any:
        fallback = await self._slot.resolve_default()
        method = getattr(fallback, method_name, None)
        if callable(method):
            result = method(params)
            if inspect.isawaitable(result):
                result = await result
            return result
        return context_engine_fallback_result(method_name)

    def __repr__(self) -> str:
        state = "quarantined" if self._slot.is_quarantined(self._engine_id) else "active"
        return f"<QuarantineProxy {self._engine_id!r} ({state})>"


def _reason_text(error: BaseException | str) -> str:
    if isinstance(error, BaseException):
        return str(error) or type(error).__name__
    return error


def _abort_error(signal: Any) -> BaseException:
    reason = signal.reason
    if isinstance(reason, BaseException):
        return reason
    return AbortError(str(reason) if reason else "Context engine operation aborted.")


def _is_abort_rejection(error: BaseException, signal: Any) -> bool:
    if signal is None or not signal.aborted:
        return False
    return error is signal.reason or is_abort_error(error)
