"""A tool loop's request messages without converting the whole history at every request.

``convert_messages`` turns the transcript into the Messages API's ``messages`` before every
request: the replay transform, tool-call ids made valid and unique, one param per turn,
same-role turns merged. Inside a tool loop each request resends the previous one's messages
(the very same objects) and adds whole tool groups, so this keeps the previous request's
messages and params (before any ``cache_control`` marker) with the places where a group
started after a tool result or a prompt (*cuts*: there the params of what came before are
final). When the new request shares the previous one's messages up to a cut (all of them,
or up to the last group's turn, which an older Claude model's sanitizer hands back as a copy
without its thinking) and goes on with *clean groups*, only those are converted:

* each group is an assistant turn with calls whose ids the id rule keeps as they are (valid,
  not taken before, not twice), followed by tool results (any: the transform drops a result
  that answers no call of its turn, and adds one for a call without);
* the replay transform then treats the groups alone as it would in place: its state starts
  over at every assistant turn (a call of the previous turn without a result gets its
  synthetic result there or at the end, the same place), and works message by message
  otherwise (another model's turn, a failed turn, images for a text-only model);
* the id rule keeps every call id of the groups and gives their results the same, so
  nothing of its state matters but the ids taken before the cut (kept here with the param
  each first appears in; an id seen before is one taken, unless the rule rewrote it, and
  then it is not valid as it is); and the groups' params merge with nothing before them:
  the part before the cut ends with a user param (checked: its last tool results or prompt
  may have been dropped, a failed turn's results say), and a group opens with an assistant
  param (its calls).

Anything else converts everything, as before. Thinking off (only the active tool turn keeps
it) always does. The params are shared between requests, so they must not be changed: the
caller adds its cache markers on copies (``with_cache_control``), and a request whose body a
hook may rewrite (``on_payload``) does not use the memo. A few conversations are kept
(least recently used dropped): each holds its body's params.
"""

from __future__ import annotations

import itertools
import operator
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from openclaw_runtime.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from openclaw_runtime.transcript.tool_call_ids import is_valid_tool_call_id

__all__ = ["CONVERSATIONS_KEPT", "ParamsMemo"]

#: How many conversations' params are kept (each about the size of its request body).
CONVERSATIONS_KEPT = 8

Params = list[dict[str, Any]]
Key = tuple[Any, ...]


class _Conversation:
    __slots__ = ("cuts", "first_use", "inputs", "key", "params")

    def __init__(self, key: Key, inputs: list[Any], params: Params) -> None:
        self.key = key
        self.inputs = inputs
        self.params = params
        #: (messages, params): where the params of ``inputs[:messages]`` end, at each place
        #: a group started after a tool result or a prompt (and at the end, after one): a cut
        self.cuts: list[tuple[int, int]] = []
        if inputs and _ends_a_part(inputs[-1]):
            self.cuts.append((len(inputs), len(params)))
        #: call id → the param it first appears in (taken by the id rule before a cut there)
        self.first_use: dict[str, int] = _first_uses(params)


class ParamsMemo:
    """The previous request's messages and params of a few conversations (module docstring)."""

    def __init__(self, kept: int = CONVERSATIONS_KEPT) -> None:
        self._kept = kept
        self._conversations: OrderedDict[int, _Conversation] = OrderedDict()

    def convert(
        self,
        messages: Sequence[Any],
        key: Key,
        full: Callable[[Sequence[Any]], Params],
        group_params: Callable[[Sequence[Any]], Params],
    ) -> Params:
        """``full(messages)``, or the previous params up to a cut plus ``group_params`` of
        each clean group added after it (the same params). Not to be changed by the caller."""
        if not messages:
            return full(messages)
        head = id(messages[0])
        known = self._conversations.get(head)
        if known is not None and known.inputs[0] is messages[0] and known.key == key:
            params = _appended(known, messages, group_params)
            if params is not None:
                self._conversations.move_to_end(head)
                return params
        params = full(messages)
        conversation = _Conversation(key, list(messages), params)
        _cut_before_last_group(conversation, group_params)
        self._conversations[head] = conversation
        self._conversations.move_to_end(head)
        while len(self._conversations) > self._kept:
            self._conversations.popitem(last=False)
        return params


def _shared_length(old: Sequence[Any], new: Sequence[Any]) -> int:
    """How many leading positions hold the very same objects (``is``), found at C speed."""
    if all(map(operator.is_, old, new)):
        return min(len(old), len(new))
    return next(itertools.compress(itertools.count(), map(operator.is_not, old, new)))


def _cut_before_last_group(
    conversation: _Conversation, group_params: Callable[[Sequence[Any]], Params]
) -> None:
    """After a whole conversion: a cut before the last group too, when that group (an
    assistant turn with calls and its results) follows a tool result or a prompt, so that
    the next request may hand it back as a copy. The params before it are final there
    whatever the group holds (module docstring); how many params the group made is what it
    makes converted alone (an assistant param unless the turn failed, a user param for its
    results, real or synthetic)."""
    inputs, params = conversation.inputs, conversation.params
    start = len(inputs)
    while start > 0 and type(inputs[start - 1]) is ToolResultMessage:
        start -= 1
    start -= 1  # the group's assistant turn
    if start < 1 or type(inputs[start]) is not AssistantMessage:
        return
    if not _ends_a_part(inputs[start - 1]):
        return
    kept = len(params) - len(group_params(inputs[start:]))
    if kept >= 0:
        conversation.cuts.insert(0, (start, kept))


def _ends_a_part(message: Any) -> bool:
    """Whether a cut may follow ``message``: a tool result, or a prompt with text (its param
    is a user param, which an assistant turn's does not merge with; a blank prompt has
    none)."""
    if type(message) is ToolResultMessage:
        return True
    content = getattr(message, "content", None)
    return type(message) is UserMessage and isinstance(content, str) and bool(content.strip())


def _appended(
    known: _Conversation, messages: Sequence[Any], group_params: Callable[[Sequence[Any]], Params]
) -> Params | None:
    """The params of ``messages`` from ``known``'s up to its last cut the request shares and
    the clean groups after it (and ``known`` moved on to them), or ``None``."""
    shared = _shared_length(known.inputs, messages)
    cut = next((c for c in reversed(known.cuts) if c[0] <= shared), None)
    if cut is None or cut[0] >= len(messages):
        return None
    count, kept = cut
    if kept and known.params[kept - 1].get("role") != "user":
        return None  # the part before ends with an assistant param (what it ended with was
        # dropped: a failed turn's results): the next assistant turn would merge into it
    added = messages[count:]
    groups = _clean_groups(added, lambda call_id: known.first_use.get(call_id, kept) < kept)
    if groups is None:
        return None
    params = known.params[:kept]
    cuts = [c for c in known.cuts if c[0] < count]
    position = count
    for group in groups:
        cuts.append((position, len(params)))
        converted = group_params(group)
        for offset, param in enumerate(converted):
            for call_id in _param_ids(param):
                known.first_use[call_id] = len(params) + offset
        params.extend(converted)
        position += len(group)
    cuts.append((position, len(params)))
    known.inputs, known.params, known.cuts = list(messages), params, cuts
    return params


def _clean_groups(added: Sequence[Any], taken: Callable[[str], bool]) -> list[list[Any]] | None:
    """``added`` split into clean groups (module docstring), or ``None``."""
    groups: list[list[Any]] = []
    seen: set[str] = set()
    for message in added:
        if type(message) is ToolResultMessage and groups:
            groups[-1].append(message)  # a result, whatever it names: placed alone
            continue
        if type(message) is not AssistantMessage:
            return None
        calls = [block for block in message.content if isinstance(block, ToolCall)]
        if not calls:
            return None
        for call in calls:
            call_id = call.id
            if call_id in seen or taken(call_id):
                return None  # the id rule would rewrite it
            if not is_valid_tool_call_id(call_id, "anthropic"):
                return None
            seen.add(call_id)
        groups.append([message])
    return groups


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
