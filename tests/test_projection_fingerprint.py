"""``ToolResultProjectionState`` fingerprints a tool result only when it has a projection to
compare it with or to keep: results that fit (nearly all of a history replayed after a
restart) cost no JSON dump and hash, and the decisions stay those of before."""

from __future__ import annotations

from typing import Any

import pytest

from openclaw_runtime.context import projection
from openclaw_runtime.context.guard import (
    estimate_tool_result_context_chars,
    truncate_tool_result_to_chars,
)
from openclaw_runtime.context.projection import ToolResultProjectionState
from openclaw_runtime.messages import TextContent, ToolResultMessage


def _result(call_id: str, size: int, marker: str = "line") -> ToolResultMessage:
    body = "".join(f"{marker} {i}\n" for i in range(size // 8))
    return ToolResultMessage(
        tool_call_id=call_id, tool_name="read", content=[TextContent(text=body)]
    )


@pytest.fixture
def fingerprints(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = projection.tool_result_fingerprint

    def counted(message: ToolResultMessage) -> str:
        calls.append(message.tool_call_id)
        return real(message)

    monkeypatch.setattr(projection, "tool_result_fingerprint", counted)
    return calls


def _project(state: ToolResultProjectionState, message: Any, limit: int) -> Any:
    return state.project(
        message, limit, truncate_tool_result_to_chars, estimate_tool_result_context_chars
    )


def test_results_that_fit_are_not_fingerprinted(fingerprints: list[str]) -> None:
    state = ToolResultProjectionState()
    for index in range(20):
        small = _result(f"c{index}", 200)
        assert _project(state, small, 4_000) is small
    assert fingerprints == [] and len(state) == 0


def test_a_projection_is_fingerprinted_once_then_compared(fingerprints: list[str]) -> None:
    state = ToolResultProjectionState()
    big = _result("c1", 40_000)
    first = _project(state, big, 4_000)
    assert first is not big and fingerprints == ["c1"]
    assert _project(state, big, 4_000) is first  # compared with the kept fingerprint
    assert fingerprints == ["c1", "c1"]
    changed = _result("c1", 40_000, marker="other")
    again = _project(state, changed, 4_000)
    assert again is not first and "other" in again.content[0].text
    # the same id now small: compared, it fits, and the kept projection is dropped
    small = _result("c1", 200)
    assert _project(state, small, 4_000) is small
    assert len(state) == 0
