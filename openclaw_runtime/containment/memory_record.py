"""The plugin fault record of a runtime in memory mode: this process only, no file.

``[backends] default = "memory"`` promises that nothing is written under ``state_dir``, so a
plugin fault is counted here (the same folding as the file record, ``record.fold_fault``)
instead of in ``<state_dir>/plugins/faults.json``. Later processes do not see it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from .guard import PluginFault
from .record import fold_fault

__all__ = ["InMemoryFaultRecord"]


class InMemoryFaultRecord:
    """``FaultRecord``'s calls (``entries``, ``add``, ``clear``...) over a list in memory."""

    #: What messages name as the record's place (not a file).
    path = Path("memory:plugin-faults")

    def __init__(self) -> None:
        self._entries: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        #: Damaged record files this process moved aside (never any here).
        self.set_aside: list[Path] = []

    def __repr__(self) -> str:
        return f"InMemoryFaultRecord(entries={len(self._entries)})"

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first (copies)."""
        with self._lock:
            return [dict(entry) for entry in self._entries]

    def damaged_files(self) -> list[Path]:
        """Nothing is ever damaged in memory."""
        return []

    def add(self, fault: PluginFault) -> None:
        """Count ``fault`` into the record."""
        with self._lock:
            self._entries = fold_fault(self._entries, fault)

    def clear(self, plugin: str | None = None) -> int:
        """Forget every entry (or ``plugin``'s); how many were removed."""
        with self._lock:
            kept = [] if plugin is None else [e for e in self._entries if e.get("plugin") != plugin]
            removed = len(self._entries) - len(kept)
            self._entries = kept
            return removed
