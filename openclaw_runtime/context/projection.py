"""Remembering how each tool result was projected for the model, so the bytes stay stable.

The context guard sends the model a bounded copy (a projection) of every heavy tool result;
the transcript keeps the original. Provider prompt caches match on exact bytes, so a tool
result must be projected to the *same* bytes on every later request of the run: if a later
request had more room (a larger window after a model swap, a smaller tool-result cap being
lifted) and re-truncated the original with the new budget, the history would change under
the cache and every following token would be billed again. The projection state keeps, per
tool call id, a fingerprint of the original and the projection sent; the same original is
projected identically while the projection still fits the current budget, and re-projected
only when the budget shrank below it or the original changed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..messages import ToolResultMessage

__all__ = ["ToolResultProjectionState", "tool_result_fingerprint"]

ProjectFn = Callable[[Any, int], Any]
MeasureFn = Callable[[Any], int]


def tool_result_fingerprint(message: ToolResultMessage) -> str:
    """A digest of what the model would see of ``message`` before projection."""
    payload = message.model_dump_json(include={"tool_call_id", "tool_name", "content", "is_error"})
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class _Projection:
    fingerprint: str
    size: int
    projected: ToolResultMessage


class ToolResultProjectionState:
    """Per tool call id: the original's fingerprint and the projection that was sent."""

    def __init__(self) -> None:
        # made with the first projection kept (most runs never cut a tool result)
        self._entries: dict[str, _Projection] | None = None

    def __len__(self) -> int:
        return len(self._entries) if self._entries is not None else 0

    def project(self, message: Any, max_chars: int, project: ProjectFn, measure: MeasureFn) -> Any:
        """``project(message, max_chars)``, or the earlier projection of the same original
        when it still fits ``max_chars`` (by ``measure``). Non tool results pass through."""
        if not isinstance(message, ToolResultMessage):
            return project(message, max_chars)
        key = message.tool_call_id
        entries = self._entries
        earlier = entries.get(key) if entries is not None else None
        # the fingerprint (a JSON dump and a hash) only when there is one to compare or keep:
        # most results fit as they are (a first request after a restart meets thousands)
        fingerprint = None if earlier is None else tool_result_fingerprint(message)
        if earlier is not None and earlier.fingerprint == fingerprint and earlier.size <= max_chars:
            return earlier.projected
        projected = project(message, max_chars)
        if projected is message:
            if entries is not None:
                entries.pop(key, None)  # it fits as it is: nothing to remember
        else:
            if fingerprint is None:
                fingerprint = tool_result_fingerprint(message)
            if entries is None:
                entries = self._entries = {}
            entries[key] = _Projection(fingerprint, measure(projected), projected)
        return projected

    def forget(self, tool_call_id: str | None = None) -> None:
        """Drop one remembered projection (or all), e.g. after the transcript was rewritten."""
        if self._entries is None:
            return
        if tool_call_id is None:
            self._entries.clear()
        else:
            self._entries.pop(tool_call_id, None)
