"""What the Messages API's conversion does, as the core's request memo needs it.

``convert_messages`` turns the transcript into the Messages API's ``messages`` before every
request: the replay transform, tool-call ids made valid and unique, one param per turn,
same-role turns merged. Through ``openclaw_runtime.providers.request_memo`` a request
converts only the units (tool groups, answers, prompts) it adds after the part the previous
request sent, when each is *clean*:

* its assistant turn's call ids are kept as they are by the id rule (valid, not taken
  before, not twice); tool results may be anything (the transform drops a result that
  answers no call of its turn, and adds one for a call without);
* the replay transform then treats the units alone as it would in place (its state starts
  over at every assistant turn and prompt and works message by message otherwise: another
  model's turn, a failed turn, images for a text-only model);
* the id rule keeps every call id of the units and gives their results the same, so nothing
  of its state matters but the ids taken before: every one of them is in the params (the
  transform drops a failed turn's calls before the rule sees them), so the params name them
  (an id seen before is one taken, unless the rule rewrote it, and then it is not valid as
  it is).

Their params must not merge into the last param before them (same role: ``joins``). With
thinking off the active tool turn alone keeps its thinking, so no cut is placed after it
(``settled``) when it has thinking to keep: the next request converts that turn again,
without its thinking (two groups a request instead of one). A turn with none (thinking off,
the model did not think) converts the same either way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from openclaw_runtime.messages import AssistantMessage, ToolCall
from openclaw_runtime.providers.request_memo import Taken
from openclaw_runtime.transcript.tool_call_ids import is_valid_tool_call_id

__all__ = ["MessagesConversion"]

Params = list[dict[str, Any]]


class MessagesConversion:
    """One request's conversion (``convert`` of a whole list or of the units a request
    adds) with the Messages API's rules for the memo (module docstring)."""

    __slots__ = ("_convert", "_plain_active", "_replay_thinking")

    def __init__(
        self,
        convert: Callable[[Sequence[Any]], tuple[Params, bool]],
        *,
        replay_thinking: bool = True,
    ) -> None:
        #: the params of messages, and whether they have an active tool turn with no
        #: thinking to keep (``_request._converted``)
        self._convert = convert
        self._replay_thinking = replay_thinking
        #: whether the last list converted had an active tool turn with no thinking: every
        #: list the memo converts for one request ends that request, so its active turn is
        #: the request's (or the list does not reach back to it: ``False``)
        self._plain_active = False

    def whole(self, messages: Sequence[Any]) -> tuple[Params, Taken]:
        """The params and the first param each call id appears in (calls and results)."""
        params = self._converted(messages)
        return params, Taken(_first_uses(params), {})

    def part(self, units: Sequence[Any]) -> Params:
        """The units' params."""
        return self._converted(units)

    def _converted(self, messages: Sequence[Any]) -> Params:
        params, self._plain_active = self._convert(messages)
        return params

    def clean(self, unit: Sequence[Any], taken: Callable[[str], bool]) -> bool:
        """Every call id of the unit's turn (if an assistant's) kept as it is by the rule."""
        turn = unit[0]
        if not isinstance(turn, AssistantMessage):
            return True
        seen: set[str] = set()
        for block in turn.content:
            if not isinstance(block, ToolCall):
                continue
            call_id = block.id
            if call_id in seen or taken(call_id) or not is_valid_tool_call_id(call_id, "anthropic"):
                return False
            seen.add(call_id)
        return True

    def joins(self, before: dict[str, Any], after: dict[str, Any]) -> bool:
        """Turns of one role in a row merge."""
        return before.get("role") == after.get("role")

    def settled(self, params: Params) -> int:
        """With thinking off, the active tool turn (the last assistant param, when results
        follow it) keeps its thinking, as thinking or as text, and loses it once another
        turn follows: everything before it is settled (all of them when the request's
        active turn, converted last, has no thinking)."""
        if self._replay_thinking or self._plain_active:
            return len(params)
        index = len(params) - 1
        while index >= 0 and params[index].get("role") == "user":
            content = params[index].get("content")
            if not isinstance(content, list) or not any(
                block.get("type") == "tool_result" for block in content
            ):
                return len(params)  # a prompt last: no turn is active
            index -= 1
        return index if 0 <= index < len(params) - 1 else len(params)


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
