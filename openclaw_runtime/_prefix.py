"""How many leading items two lists share by identity: what a per-request cache may keep.

The caches between a history and a request (the converted messages, the guard's tool-result
projections, the running token estimate) remember the previous request's messages and reuse
their work for the same message objects. A request that resends those objects and adds some
reuses all of it; one whose messages differ from some position on (a sanitizer handing back
a fresh copy of a recent tool result, a plugin's transform replacing the tail) can still
reuse everything before that position, rather than starting over on the whole history.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Sequence
from typing import Any

__all__ = ["shared_prefix_length", "starts_with"]


def starts_with(items: Sequence[Any], prefix: Sequence[Any]) -> bool:
    """``items`` begins with the very objects of ``prefix``, in order (a cache's usual
    question: does this request resend every message of the previous one?)."""
    return len(items) >= len(prefix) and all(map(operator.is_, prefix, items))


def shared_prefix_length(old: Sequence[Any], new: Sequence[Any]) -> int:
    """The number of leading positions at which ``old`` and ``new`` hold the very same
    objects (``is``, never ``==``): ``min(len(old), len(new))`` when one starts the other."""
    if all(map(operator.is_, old, new)):  # the usual answer, and the cheapest scan
        return min(len(old), len(new))
    # the first position whose objects differ, found at C speed (no Python loop per item)
    return next(itertools.compress(itertools.count(), map(operator.is_not, old, new)))
