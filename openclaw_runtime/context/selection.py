"""Which context engine a turn uses, before anything is built or quarantined.

Two rules of OpenClaw's context-engine registry that sit beside the quarantine proxy:

* **A disabled owner is not a failure.** When the plugin that owns the configured engine is
  disabled (not admitted by ``[plugins] allow``, on ``[plugins] disable``, or every plugin
  blocked with ``*``), the default engine is used silently: no quarantine, no error log, and
  the engine's factory is never called. The slot keeps its configured name, so re-enabling
  the plugin brings the engine back. An engine nobody registered is attributed to a plugin of
  its own name (the usual packaging), so disabling that plugin is silent too.
* **A logical turn resolves fresh and reports instead of quarantining**
  (``resolveLogicalTurnContextEngines``): both the configured engine and the default are
  built for this turn only; a configured engine that is missing, whose factory raises or that
  breaks the contract is reported as ``configured_failure`` and the default stands in for it,
  but the process-wide quarantine is neither consulted nor changed, so the next turn tries
  the configured engine again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._exceptions import ConfigurationError
from .engine import describe_context_engine_contract_error

__all__ = [
    "LogicalTurnContextEngines",
    "OwnerEnabled",
    "context_engine_owner",
    "plugin_owner_enabled",
    "resolve_effective_context_engine_id",
    "resolve_logical_turn_context_engines",
]

#: ``owner plugin name -> may its engines be used``.
OwnerEnabled = Callable[[str], bool]

_DEFAULT_ALIASES = frozenset({"", "legacy", "none"})


def plugin_owner_enabled(owner: str, *, records: Mapping[str, Any], policy: Any) -> bool:
    """Whether the plugin ``owner`` is enabled under the runtime's plugin policy.

    ``records`` maps plugin names to records with ``source`` and ``status``; ``policy`` has
    ``admits(name)``. Built-in plugins are always enabled; a plugin the loader blocked is not;
    any other name is asked of the policy (allow list, deny list, ``*``).
    """
    record = records.get(owner)
    if record is not None and getattr(record, "source", None) == "builtin":
        return True
    if record is not None and getattr(record, "status", None) == "blocked":
        return False
    return bool(policy.admits(owner))


def context_engine_owner(engine_id: str, registry: Any) -> str:
    """The plugin that owns ``engine_id``: its registration's plugin, else a plugin of that name."""
    if engine_id in registry:
        plugin = registry.registration(engine_id).plugin
        if plugin:
            return str(plugin)
    return engine_id


def resolve_effective_context_engine_id(
    configured: str | None,
    registry: Any,
    owner_enabled: OwnerEnabled | None,
    default_engine_id: str,
) -> str:
    """The engine id to resolve: ``default_engine_id`` for a default alias or a disabled owner."""
    engine_id = (configured or "").strip()
    if engine_id.lower() in _DEFAULT_ALIASES or engine_id == default_engine_id:
        return default_engine_id
    if owner_enabled is not None and not owner_enabled(context_engine_owner(engine_id, registry)):
        return default_engine_id
    return engine_id


@dataclass(frozen=True, slots=True)
class LogicalTurnContextEngines:
    """The engines of one logical turn (OpenClaw's ``LogicalTurnContextEngineResolution``).

    ``configured`` is the fallback itself when the configured engine could not be used;
    ``configured_failure`` then says why (None when it was used, or was simply disabled).
    """

    configured: Any
    configured_id: str
    fallback: Any
    configured_failure: str | None = None
    owner: str | None = None

    @property
    def degraded(self) -> bool:
        """Whether the configured engine failed and the fallback stands in for it."""
        return self.configured_failure is not None


async def resolve_logical_turn_context_engines(
    slot: Any, configured: str | None = None
) -> LogicalTurnContextEngines:
    """Fresh engines for one turn; failures are reported, never quarantined.

    ``slot`` is a ``ContextEngineSlot`` (its registry, default id, owner policy and factory
    context are used; its quarantine ledger is not). A failure of the default engine raises,
    as it does for ``resolve``.
    """
    default_id: str = slot.default_engine_id
    fallback = await _build_checked(slot, default_id)
    engine_id = resolve_effective_context_engine_id(
        configured, slot.registry, getattr(slot, "owner_enabled", None), default_id
    )
    if engine_id == default_id:
        return LogicalTurnContextEngines(fallback, default_id, fallback)
    if engine_id not in slot.registry:
        return LogicalTurnContextEngines(
            fallback,
            engine_id,
            fallback,
            configured_failure=f'context engine "{engine_id}" is not registered',
        )
    owner = slot.registry.registration(engine_id).plugin
    try:
        engine = await _build_checked(slot, engine_id)
    except Exception as exc:
        return LogicalTurnContextEngines(
            fallback,
            engine_id,
            fallback,
            configured_failure=str(exc) or type(exc).__name__,
            owner=owner,
        )
    return LogicalTurnContextEngines(engine, engine_id, fallback, owner=owner)


async def _build_checked(slot: Any, engine_id: str) -> Any:
    if engine_id not in slot.registry:
        available = ", ".join(slot.registry.names()) or "(none)"
        raise ConfigurationError(
            f'Context engine "{engine_id}" is not registered. Available engines: {available}'
        )
    engine = await slot._build(slot.registry.registration(engine_id).component)
    problem = describe_context_engine_contract_error(engine_id, engine)
    if problem is not None:
        raise ConfigurationError(problem)
    return engine
