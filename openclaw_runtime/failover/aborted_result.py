"""Is a candidate's returned result an aborted run?

The model-fallback chain treats a returned result as a success (``fallback_succeeded``) and
an exception as a failure. An aborted run is neither: the caller asked it to stop, so no
other model is tried, and reporting the candidate as having succeeded would tell dashboards
and observers that an answer was produced. Results report an abort in one of a few shapes:
a ``status`` of ``aborted``/``cancelled`` (the runner's candidate result, a lifecycle
status), or an ``aborted`` flag (OpenClaw's embedded run result ``meta``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["ABORTED_RUN_STATUSES", "is_aborted_run_result"]

#: Statuses that mean the run was stopped on request, not finished.
ABORTED_RUN_STATUSES = frozenset({"aborted", "cancelled", "canceled"})


def _field(result: Any, name: str) -> Any:
    if isinstance(result, Mapping):
        return result.get(name)
    return getattr(result, name, None)


def is_aborted_run_result(result: Any) -> bool:
    """Whether ``result`` (an object or a mapping) reports an aborted run."""
    if result is None:
        return False
    status = _field(result, "status")
    if isinstance(status, str) and status.strip().lower() in ABORTED_RUN_STATUSES:
        return True
    if _field(result, "aborted") is True:
        return True
    meta = _field(result, "meta")
    return meta is not None and _field(meta, "aborted") is True
