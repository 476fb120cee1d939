"""What the Messages API's conversion does, as the core's request memo needs it.

``convert_messages`` turns the transcript into the Messages API's ``messages`` before every
request: the replay transform, tool-call ids made valid and unique, one param per turn,
same-role turns merged. Through ``openclaw_runtime.providers.request_memo`` a tool loop's
request converts only the groups it adds, when each is *clean*:

* the group is an assistant turn with calls whose ids the id rule keeps as they are (valid,
  not taken before, not twice), followed by tool results (any: the transform drops a result
  that answers no call of its turn, and adds one for a call without);
* the replay transform then treats the group alone as it would in place (its state starts
  over at every assistant turn and works message by message otherwise: another model's
  turn, a failed turn, images for a text-only model);
* the id rule keeps every call id of the group and gives its results the same, so nothing
  of its state matters but the ids taken before (calls and results of the params: an id
  seen before is one taken, unless the rule rewrote it, and then it is not valid as it is);
* the group's params merge with nothing before them: the part before the cut ends with a
  user param (its last tool results or prompt may have been dropped, a failed turn's
  results say), and a group opens with an assistant param (its calls).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from openclaw_runtime.messages import AssistantMessage, ToolCall
from openclaw_runtime.transcript.tool_call_ids import is_valid_tool_call_id

__all__ = ["MessagesConversion"]

Params = list[dict[str, Any]]


class MessagesConversion:
    """One request's conversion (``convert`` of a whole list or of one group) with the
    Messages API's rules for the memo (module docstring)."""

    __slots__ = ("_convert",)

    def __init__(self, convert: Callable[[Sequence[Any]], Params]) -> None:
        self._convert = convert

    def whole(self, messages: Sequence[Any]) -> tuple[Params, dict[str, int]]:
        """The params and the first param each call id appears in (calls and results)."""
        params = self._convert(messages)
        return params, _first_uses(params)

    def group(self, group: Sequence[Any]) -> Params:
        """One group's params."""
        return self._convert(group)

    def clean(self, group: Sequence[Any], taken: Callable[[str], bool]) -> bool:
        """Every call id of the group's turn kept as it is by the id rule."""
        turn = group[0]
        assert isinstance(turn, AssistantMessage)
        seen: set[str] = set()
        for block in turn.content:
            if not isinstance(block, ToolCall):
                continue
            call_id = block.id
            if call_id in seen or taken(call_id) or not is_valid_tool_call_id(call_id, "anthropic"):
                return False
            seen.add(call_id)
        return True

    def opens_after(self, param: dict[str, Any]) -> bool:
        """A group's assistant param merges into an assistant param before it."""
        return param.get("role") == "user"


def _param_ids(param: dict[str, Any]) -> list[str]:
    content = param.get("content")
    if not isinstance(content, list):
        return []
    ids = []
    for block in content:
        kind = block.get("type")
        if kind == "tool_use":
            ids.append(block["id"])
        elif kind == "tool_result":
            ids.append(block["tool_use_id"])
    return ids


def _first_uses(params: Params) -> dict[str, int]:
    """Call id → the first param it appears in (calls and results)."""
    first: dict[str, int] = {}
    for index, param in enumerate(params):
        for call_id in _param_ids(param):
            first.setdefault(call_id, index)
    return first
