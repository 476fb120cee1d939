"""The persisted fault record: ``<state_dir>/plugins/faults.json``.

A plugin that failed in one process must still be visible in the next one (``openclaw-runtime
plugins``, ``doctor``) until someone clears it, so every fault is folded into one entry per
``(plugin, hook, unit)`` — its count, first and last time, last error text, and whether (and how
often) it was quarantined. Writes hold ``faults.json.lock`` (a file lock, as the auth ledger does)
and replace the file atomically, so several processes never lose each other's counts.

A record that cannot be read (not JSON, wrong shape) is set aside as
``faults.json.corrupt-<time>`` — named in a warning and by ``doctor`` — and the runtime goes on
from an empty record. It never raises into a run.
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import orjson

from .._exceptions import OpenClawRuntimeWarning
from .._files import atomic_write
from ..redaction import package_logger
from .guard import PluginFault

__all__ = ["FAULT_RECORD_VERSION", "FaultRecord", "fold_fault"]

logger = package_logger(logging.getLogger("openclaw_runtime.plugins"))

FAULT_RECORD_VERSION = 1
#: Entries kept (most recent by ``lastAt``); a plugin failing in many places cannot grow the file.
MAX_ENTRIES = 500
_ENTRY_FIELDS: dict[str, tuple[type, ...]] = {
    "hook": (str,),
    "unit": (str,),
    "error": (str,),
    "count": (int,),
    "firstAt": (int, float),
    "lastAt": (int, float),
    "quarantines": (int,),
}

T = TypeVar("T")


def fold_fault(entries: list[dict[str, Any]], fault: PluginFault) -> list[dict[str, Any]]:
    """``entries`` with ``fault`` counted into its ``(plugin, hook, unit)`` entry (pure)."""
    unit = fault.unit or fault.hook
    out = [dict(e) for e in entries]
    for entry in out:
        if (entry.get("plugin"), entry["hook"], entry["unit"]) == (fault.plugin, fault.hook, unit):
            entry["count"] += 1
            entry["lastAt"] = fault.at
            entry["error"] = fault.error
            if fault.quarantined:
                entry["quarantines"] += 1
                entry["quarantinedAt"] = fault.at
            break
    else:
        entry = {
            "plugin": fault.plugin,
            "hook": fault.hook,
            "unit": unit,
            "error": fault.error,
            "count": 1,
            "firstAt": fault.at,
            "lastAt": fault.at,
            "quarantines": 1 if fault.quarantined else 0,
        }
        if fault.quarantined:
            entry["quarantinedAt"] = fault.at
        out.append(entry)
    out.sort(key=lambda e: e["lastAt"])
    return out[-MAX_ENTRIES:]


def _valid_entries(document: object) -> list[dict[str, Any]] | None:
    if not isinstance(document, dict) or not isinstance(document.get("entries"), list):
        return None
    entries = document["entries"]
    for entry in entries:
        if not isinstance(entry, dict):
            return None
        if not (entry.get("plugin") is None or isinstance(entry.get("plugin"), str)):
            return None
        for key, types in _ENTRY_FIELDS.items():
            value = entry.get(key)
            if isinstance(value, bool) or not isinstance(value, types):
                return None
    return entries


class FaultRecord:
    """The fault record file of one state dir (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str], *, lock_timeout: float = 5.0) -> None:
        self.path = Path(path).expanduser()
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.lock_timeout = lock_timeout
        #: Damaged record files this process moved aside.
        self.set_aside: list[Path] = []

    @classmethod
    def in_state_dir(cls, state_dir: str | os.PathLike[str]) -> FaultRecord:
        """``<state_dir>/plugins/faults.json``."""
        return cls(Path(state_dir).expanduser() / "plugins" / "faults.json")

    def __repr__(self) -> str:
        return f"FaultRecord({str(self.path)!r})"

    # reading -------------------------------------------------------------------------------

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, oldest first; a damaged file is set aside and reads as empty."""
        if not self.path.exists():
            return []
        return self._locked(self._read)

    def damaged_files(self) -> list[Path]:
        """Record files set aside as damaged (by any process), oldest first."""
        try:
            return sorted(self.path.parent.glob(self.path.name + ".corrupt-*"))
        except OSError:
            return []

    # writing -------------------------------------------------------------------------------

    def add(self, fault: PluginFault) -> None:
        """Count ``fault`` into the record."""

        def update() -> None:
            self._write(fold_fault(self._read(), fault))

        self._locked(update, create=True)

    def clear(self, plugin: str | None = None) -> int:
        """Forget every entry (or ``plugin``'s); how many were removed."""
        if not self.path.exists():
            return 0

        def update() -> int:
            entries = self._read()
            kept = [] if plugin is None else [e for e in entries if e.get("plugin") != plugin]
            if len(kept) != len(entries):
                self._write(kept)
            return len(entries) - len(kept)

        return self._locked(update)

    # plumbing ------------------------------------------------------------------------------

    def _locked(self, fn: Callable[[], T], *, create: bool = False) -> T:
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        import filelock  # lazy: start-up time (a Runtime builds its record before any fault)

        lock = filelock.FileLock(self.lock_path, timeout=self.lock_timeout, mode=0o600)
        with lock:
            return fn()

    def _read(self) -> list[dict[str, Any]]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        if not data.strip():
            return []
        try:
            entries = _valid_entries(orjson.loads(data))
        except orjson.JSONDecodeError:
            entries = None
        if entries is None:
            self._set_aside()
            return []
        return entries

    def _write(self, entries: list[dict[str, Any]]) -> None:
        document = {"version": FAULT_RECORD_VERSION, "entries": entries}
        atomic_write(self.path, orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n")

    def _set_aside(self) -> None:
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        target = self.path.with_name(f"{self.path.name}.corrupt-{stamp}-{os.urandom(3).hex()}")
        os.replace(self.path, target)
        self.set_aside.append(target)
        message = (
            f"plugin fault record {str(self.path)!r} could not be read; kept it aside as "
            f"{str(target)!r} and started from an empty record"
        )
        logger.warning(message)
        warnings.warn(message, OpenClawRuntimeWarning, stacklevel=2)
