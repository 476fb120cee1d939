"""A tool loop's request messages without converting the whole history at every request.

A provider turns the transcript into its API's messages (*params*) before every request:
the replay transform, tool-call ids made valid and unique, one param per turn. Inside a tool
loop each request resends the previous one's messages (the very same objects) and adds whole
tool groups, so :class:`RequestMemo` keeps the previous request's messages and params with
the places where a group started after a tool result or a prompt (*cuts*: there the params of
what came before are final). When the new request shares the previous one's messages up to a
cut (all of them, or up to the last group's turn, which an older Claude model's sanitizer
hands back as a copy without its thinking) and goes on with *clean groups*, only those are
converted. A group is an assistant turn with tool calls followed by tool results; what makes
it *clean* is the provider's to say (:class:`Conversion`), since it is what its conversion
does that decides whether the group converts alone as it would in place:

* a replay transform whose state starts over at every assistant turn (``providers.replay``:
  a call of the previous turn without a result gets its synthetic result there or at the
  end, the same place) and works message by message otherwise;
* an id rule that keeps every call id of the group as it is and gives its results the same:
  then nothing of its state matters but the ids taken before the cut
  (:meth:`Conversion.whole` names them, each with the first param it was taken at; the memo
  adds the ids of each group it converts);
* params that merge with nothing before them (:meth:`Conversion.opens_after`: Anthropic
  merges same-role turns, so the part before the cut must end with a user param).

Anything else converts everything, as before. The params are shared between requests, so
they must not be changed: a caller that marks them (cache markers) marks copies, and a
request whose body a hook may rewrite (``on_payload``) should not use the memo. A few
conversations are kept (least recently used dropped): each holds its body's params.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from .._prefix import shared_prefix_length
from ..messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage

__all__ = ["CONVERSATIONS_KEPT", "Conversion", "RequestMemo", "request_memo_of"]

#: How many conversations' params are kept (each about the size of its request body).
CONVERSATIONS_KEPT = 8

Params = list[Any]
Key = tuple[Any, ...]


class Conversion(Protocol):
    """One provider's conversion of a request's messages, as the memo needs it."""

    def whole(self, messages: Sequence[Any]) -> tuple[Params, dict[str, int]]:
        """The params of ``messages`` and, for each tool-call id the conversion took (as it
        went in or as it came out), the index of the first param it was taken at (the
        number of params made before, for a turn that made none)."""
        ...

    def group(self, group: Sequence[Any]) -> Params:
        """The params of one group converted alone."""
        ...

    def clean(self, group: Sequence[Any], taken: Callable[[str], bool]) -> bool:
        """Whether ``group`` (an assistant turn with calls, then results) converts alone as
        it would after the part before the cut, whose ids ``taken`` answers."""
        ...

    def opens_after(self, param: Any) -> bool:
        """Whether a group's params may follow ``param`` without merging into it."""
        ...


class _Conversation:
    __slots__ = ("cuts", "first_use", "inputs", "key", "params")

    def __init__(
        self, key: Key, inputs: list[Any], params: Params, first_use: dict[str, int]
    ) -> None:
        self.key = key
        self.inputs = inputs
        self.params = params
        #: (messages, params): where the params of ``inputs[:messages]`` end, at each place
        #: a group started after a tool result or a prompt (and at the end, after one): a cut
        self.cuts: list[tuple[int, int]] = []
        if inputs and _ends_a_part(inputs[-1]):
            self.cuts.append((len(inputs), len(params)))
        #: call id → the param it was first taken at
        self.first_use = first_use


class RequestMemo:
    """The previous request's messages and params of a few conversations (module docstring).

    One per provider instance, used on one event loop."""

    def __init__(self, kept: int = CONVERSATIONS_KEPT) -> None:
        self._kept = kept
        self._conversations: OrderedDict[int, _Conversation] = OrderedDict()

    def convert(self, messages: Sequence[Any], key: Key, conversion: Conversion) -> Params:
        """``conversion.whole(messages)``'s params, or the previous params up to a cut plus
        the params of each clean group added after it (the same params). ``key`` names
        everything else the params depend on (the model, its switches). Not to be changed by
        the caller."""
        if not messages:
            return conversion.whole(messages)[0]
        head = id(messages[0])
        known = self._conversations.get(head)
        if known is not None and known.inputs[0] is messages[0] and known.key == key:
            params = _appended(known, messages, conversion)
            if params is not None:
                self._conversations.move_to_end(head)
                return params
        params, first_use = conversion.whole(messages)
        conversation = _Conversation(key, list(messages), params, first_use)
        _cut_before_last_group(conversation, conversion)
        self._conversations[head] = conversation
        self._conversations.move_to_end(head)
        while len(self._conversations) > self._kept:
            self._conversations.popitem(last=False)
        return params


def _cut_before_last_group(conversation: _Conversation, conversion: Conversion) -> None:
    """After a whole conversion: a cut before the last group too, when that group (an
    assistant turn with calls and its results) follows a tool result or a prompt, so that
    the next request may hand it back as a copy. The params before it are final there
    whatever the group holds (module docstring); how many params the group made is what it
    makes converted alone."""
    inputs, params = conversation.inputs, conversation.params
    start = len(inputs)
    while start > 0 and type(inputs[start - 1]) is ToolResultMessage:
        start -= 1
    start -= 1  # the group's assistant turn
    if start < 1 or type(inputs[start]) is not AssistantMessage:
        return
    if not _ends_a_part(inputs[start - 1]):
        return
    kept = len(params) - len(conversion.group(inputs[start:]))
    if kept >= 0:
        conversation.cuts.insert(0, (start, kept))


def _ends_a_part(message: Any) -> bool:
    """Whether a cut may follow ``message``: a tool result, or a prompt with text (its param
    is a user param, which an assistant turn's does not merge with; a blank prompt may have
    none)."""
    if type(message) is ToolResultMessage:
        return True
    content = getattr(message, "content", None)
    return type(message) is UserMessage and isinstance(content, str) and bool(content.strip())


def _appended(
    known: _Conversation, messages: Sequence[Any], conversion: Conversion
) -> Params | None:
    """The params of ``messages`` from ``known``'s up to its last cut the request shares and
    the clean groups after it (and ``known`` moved on to them), or ``None``."""
    shared = shared_prefix_length(known.inputs, messages)
    cut = next((c for c in reversed(known.cuts) if c[0] <= shared), None)
    if cut is None or cut[0] >= len(messages):
        return None
    count, kept = cut
    if kept and not conversion.opens_after(known.params[kept - 1]):
        return None  # the part before ends with a param the next group's would merge into
    first_use = known.first_use
    groups = _groups(messages[count:])
    if groups is None:
        return None
    added: set[str] = set()

    def taken(call_id: str) -> bool:
        return call_id in added or first_use.get(call_id, kept) < kept

    for group in groups:
        if not conversion.clean(group, taken):
            return None
        added.update(_call_ids(group[0]))
    params = known.params[:kept]
    cuts = [c for c in known.cuts if c[0] < count]
    position = count
    for group in groups:
        cuts.append((position, len(params)))
        for call_id in _call_ids(group[0]):
            first_use[call_id] = len(params)
        params.extend(conversion.group(group))
        position += len(group)
    cuts.append((position, len(params)))
    known.inputs, known.params, known.cuts = list(messages), params, cuts
    return params


def _groups(added: Sequence[Any]) -> list[list[Any]] | None:
    """``added`` split into groups (an assistant turn with calls, then its results), or
    ``None`` when it holds anything else."""
    groups: list[list[Any]] = []
    for message in added:
        if type(message) is ToolResultMessage and groups:
            groups[-1].append(message)
            continue
        if type(message) is not AssistantMessage:
            return None
        if not any(isinstance(block, ToolCall) for block in message.content):
            return None
        groups.append([message])
    return groups


def _call_ids(message: AssistantMessage) -> list[str]:
    return [block.id for block in message.content if isinstance(block, ToolCall)]


def request_memo_of(provider: Any) -> RequestMemo:
    """``provider``'s memo, made on first use and kept in its ``__dict__``: one per provider
    instance, so per runtime and event loop."""
    memo: RequestMemo | None = provider.__dict__.get("_request_memo")
    if memo is None:
        memo = provider.__dict__["_request_memo"] = RequestMemo()
    return memo
