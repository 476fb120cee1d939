"""The in-memory mode's two construction-time decisions, kept light for ``Runtime()``.

``Runtime(memory=True)`` (and ``run --memory``) becomes ``[backends] default = "memory"``, and
in that mode plugin faults are counted in this process instead of ``<state_dir>/plugins``.
Both are needed while a ``Runtime`` is built, before any backend is; the backend selection
itself (``_backend_selection``) loads with the first run.
"""

from __future__ import annotations

from .backends.kinds import MEMORY_BACKEND
from .config import RuntimeConfig
from .containment import FaultRecord
from .containment.memory_record import InMemoryFaultRecord

__all__ = ["open_fault_record", "with_memory_default"]


def with_memory_default(config: RuntimeConfig, memory: bool) -> RuntimeConfig:
    """``config`` with ``[backends] default = "memory"`` when ``memory`` (``Runtime(memory=
    True)``); kinds the config names explicitly keep their backend."""
    if not memory or config.backends.default == MEMORY_BACKEND:
        return config
    backends = config.backends.model_copy(update={"default": MEMORY_BACKEND})
    return config.model_copy(update={"backends": backends})


def open_fault_record(config: RuntimeConfig) -> FaultRecord | InMemoryFaultRecord:
    """Where plugin faults are counted: ``<state_dir>/plugins/faults.json``, or this process
    only when ``[backends] default = "memory"`` (nothing is written under ``state_dir``)."""
    if config.backends.default == MEMORY_BACKEND:
        return InMemoryFaultRecord()
    return FaultRecord.in_state_dir(config.state_dir)
