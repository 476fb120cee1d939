"""The rows of ``openclaw-runtime plugins``: one JSON-ready dict per plugin.

A pure join of what the ``Runtime`` knows about its plugins (load records, this process's
hook faults, open quarantines, the persisted fault record, component clashes), kept apart
from the ``Runtime`` so the report's shape is one function.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ._plugins import PluginRecord
from ._registry import ComponentClash
from .containment import PluginFault, PluginQuarantine
from .context.registry import ContextEngineQuarantine

__all__ = ["plugin_report"]


def plugin_report(
    records: Sequence[PluginRecord],
    *,
    faults: Iterable[PluginFault],
    engine_quarantines: Iterable[ContextEngineQuarantine],
    guard_quarantines: Iterable[PluginQuarantine],
    recorded_faults: Iterable[dict[str, Any]],
    clashes: Iterable[ComponentClash],
) -> list[dict[str, Any]]:
    """One row per loaded plugin, then one ``not loaded`` row per plugin that only appears in
    the persisted fault record (see ``Runtime.describe_plugins``)."""
    faults_by: dict[str | None, list[PluginFault]] = {}
    for fault in faults:
        faults_by.setdefault(fault.plugin, []).append(fault)
    quarantines: dict[str | None, list[dict[str, Any]]] = {}
    for quarantine in engine_quarantines:
        quarantines.setdefault(quarantine.owner, []).append(quarantine.to_dict())
    for open_unit in guard_quarantines:
        if not open_unit.unit.startswith("context_engine:"):
            quarantines.setdefault(open_unit.plugin, []).append(open_unit.to_dict())
    recorded: dict[str | None, list[dict[str, Any]]] = {}
    for entry in recorded_faults:
        recorded.setdefault(entry.get("plugin"), []).append(entry)
    clashes_by: dict[str | None, list[dict[str, Any]]] = {}
    for clash in clashes:
        for plugin in dict.fromkeys((clash.kept, clash.dropped)):
            clashes_by.setdefault(plugin, []).append(clash.to_dict())
    out = []
    for record in records:
        out.append(
            {
                "name": record.name,
                "source": record.source,
                "status": record.status,
                "distribution": record.distribution,
                "version": record.version,
                "entry_point": record.entry_point,
                "hooks": record.hooks,
                "load_error": record.error,
                "hook_errors": [
                    {"hook": f.hook, "error": f.error} for f in faults_by.get(record.name, [])
                ],
                "faults": recorded.pop(record.name, []),
                "quarantines": quarantines.get(record.name, []),
                "clashes": clashes_by.get(record.name, []),
            }
        )
    for name, entries in recorded.items():
        out.append(
            {
                "name": name or "(unknown plugin)",
                "source": "record",
                "status": "not loaded",
                "distribution": None,
                "version": None,
                "entry_point": None,
                "hooks": [],
                "load_error": None,
                "hook_errors": [],
                "faults": entries,
                "quarantines": [],
                "clashes": [],
            }
        )
    return out
