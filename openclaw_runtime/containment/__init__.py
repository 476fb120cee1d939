"""Plugin containment: a plugin that raises never takes a run down, and everyone can see it.

* ``breaker`` — the pure circuit-breaker state machine (threshold in a window, cool-off,
  half-open trial);
* ``guard`` — ``PluginGuard``: admission, fault attribution, the per-unit breakers and the
  run-scoped fault listener (``fault_scope``);
* ``record`` — ``FaultRecord``: faults and quarantines persisted in
  ``<state_dir>/plugins/faults.json`` for later processes (``openclaw-runtime plugins``).

Low in the layering on purpose: policy packages (``repair/``, ``transcript/``...) use the guard
without importing the ``Runtime``, which wires it.
"""

from .breaker import (
    BreakerPolicy,
    BreakerState,
    BreakerStep,
    breaker_admit,
    breaker_fault,
    breaker_success,
)
from .guard import (
    FaultListener,
    FaultSink,
    PluginFault,
    PluginGuard,
    PluginQuarantine,
    component_unit,
    fault_scope,
)
from .record import FaultRecord, fold_fault

__all__ = [
    "BreakerPolicy",
    "BreakerState",
    "BreakerStep",
    "FaultListener",
    "FaultRecord",
    "FaultSink",
    "PluginFault",
    "PluginGuard",
    "PluginQuarantine",
    "breaker_admit",
    "breaker_fault",
    "breaker_success",
    "component_unit",
    "fault_scope",
    "fold_fault",
]
