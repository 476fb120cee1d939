"""The sanitizer stages as specs, worked out once per set of registrations and shared.

``IncrementalSanitizer`` needs, before every request, the stages as ``SanitizerSpec`` objects,
whether all of them are built-in (only then is the incremental path allowed) and their names
and orders (part of its cache key). Each session used to work these out for itself and keep
them: ten specs, eleven tuples and two lists per session, held by every in-flight run and by
every session a process keeps open — garbage-collector work for objects that are the same in
every session of a runtime. The runtime hands every run the same registration objects until
its registry changes (``Runtime.transcript_sanitizers``), so the answer is worked out once per
such set and shared by every session; a session only checks that it is handed the same
objects as before.

The cache is small and bounded (a registry change makes a new set; the oldest set is dropped)
and keeps the registration objects it was made from, so an ``id`` in its key cannot be reused
by another object while the entry lives.
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .sanitize import BUILTIN_SANITIZERS, SanitizerSpec, _as_spec

__all__ = ["StageSpecs", "build_stage_specs", "stage_specs"]

_BUILTIN_FNS = frozenset(spec.fn for spec in BUILTIN_SANITIZERS)
#: The stage that removes tool results' ``details`` (by function: a set may rename it).
_DETAILS_FN = next(spec.fn for spec in BUILTIN_SANITIZERS if spec.name == "tool_result_details")
#: How many sets of registrations are kept (a runtime has one at a time; a few runtimes in one
#: process, or a registry that changed, make more).
CACHE_SIZE = 16


@dataclass(frozen=True, slots=True)
class StageSpecs:
    """What the incremental sanitizer needs to know of its stages (shared: never mutate)."""

    #: The objects the specs were made from, in the order given.
    sanitizers: tuple[Any, ...]
    #: Each as a ``SanitizerSpec``, in the same order.
    specs: tuple[SanitizerSpec, ...]
    #: Whether every stage is a built-in one (the only stages known to be boundary-stable).
    builtin_only: bool
    #: ``(name, order)`` per stage: part of the incremental cache key.
    stages: tuple[tuple[str, int], ...]
    #: Whether the stage removing tool results' ``details`` is among them: the only change
    #: the stages make to a clean message (``loop_tail``, ``clean_turns``), so without it
    #: (or with it switched off by the policy) a clean message comes out as it went in.
    strips_details: bool = True

    def made_from(self, sanitizers: Sequence[Any]) -> bool:
        """Whether ``sanitizers`` are the very objects these specs were made from."""
        mine = self.sanitizers
        return len(mine) == len(sanitizers) and all(map(operator.is_, mine, sanitizers))


def build_stage_specs(sanitizers: Sequence[Any]) -> StageSpecs:
    """The specs of ``sanitizers`` worked out from scratch (the reference ``stage_specs``
    must equal)."""
    specs = tuple(_as_spec(item) for item in sanitizers)
    return StageSpecs(
        tuple(sanitizers),
        specs,
        all(spec.fn in _BUILTIN_FNS for spec in specs),
        tuple((spec.name, spec.order) for spec in specs),
        any(spec.fn is _DETAILS_FN for spec in specs),
    )


_cache: dict[tuple[int, ...], StageSpecs] = {}
_lock = threading.Lock()


def stage_specs(sanitizers: Sequence[Any]) -> StageSpecs:
    """The specs of ``sanitizers``: the shared answer for the same objects, else made now
    (and kept for the next session handed them)."""
    key = tuple(map(id, sanitizers))
    found = _cache.get(key)
    if found is not None and found.made_from(sanitizers):
        return found
    built = build_stage_specs(sanitizers)
    with _lock:
        if key not in _cache and len(_cache) >= CACHE_SIZE:
            del _cache[next(iter(_cache))]  # the oldest set
        _cache[key] = built
    return built
