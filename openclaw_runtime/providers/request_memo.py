"""A session's requests without converting the whole history at every request.

A provider turns the transcript into its API's messages (*params*) before every request:
the replay transform, tool-call ids made valid and unique, one param per turn, perhaps
same-role turns merged. Inside a tool loop each request resends the previous one's messages
(the very same objects) and adds a tool group; a turn's first request resends the history
before the previous turn as the same objects and the previous turn as copies (the session's
own), then the new prompt. :class:`RequestMemo` keeps the previous request's messages and
params with *cuts*: the end of the request and the start of its last *unit* (a message that
is not a tool result, with the results after it: a tool group, an answer, a prompt), where
the params of what came before are final when what follows starts with a unit. When the new
request shares the previous one's messages up to a cut and goes on with units, only those
are converted (together, as one list), and the result is the same as converting everything
when:

* the units are *clean*, which is the provider's to say (:class:`Conversion`), since it is
  what its conversion does that decides it: a replay transform whose state starts over at
  every assistant turn and prompt (``providers.replay``: a call of the previous turn without
  a result gets its synthetic result there or at the end, the same place) and works message
  by message otherwise; an id rule that keeps every call id of the units as it is and gives
  their results the same (then nothing of its state matters but the ids taken before the
  cut: :meth:`Conversion.whole` names them, each with the first param or message it was
  taken at; the memo adds the units' ids with their messages);
* the first param of the units does not merge into the last param before the cut
  (:meth:`Conversion.joins`: Anthropic merges same-role turns), checked on the params;
* no param before the cut changes when more follows (:meth:`Conversion.settled`: no cut is
  placed after such a param).

A conversion may also carry its state from one request to the next (:class:`Resuming`):
the memo keeps it at a request's end and at its last prompt, and a request that goes on
from one of them (a tool loop's next request, the next turn's first) converts what it adds
after that state, as in place, clean or not (an id rule whose every id depends on all the
earlier ones: servers that number their calls afresh in every answer).

Anything else converts everything, as before. The params are shared between requests, so
they must not be changed: a caller that marks them (cache markers) marks copies, and a
request whose body a hook may rewrite (``on_payload``) should not use the memo.

A conversation is known by its first message and kept for as long as that object lives (a
weak reference): a session kept open holds its history, and the converted messages of it, so
each open session keeps its own, however many share the provider, and a closed session's
goes with it. Each holds about its body's params (1.6–3× the body's JSON); at most
``CONVERSATIONS_KEPT`` are kept all the same (least recently used dropped), for callers that
keep many histories alive.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

from .._prefix import shared_prefix_length
from ..messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage

__all__ = [
    "CONVERSATIONS_KEPT",
    "Conversion",
    "RequestMemo",
    "Resuming",
    "Taken",
    "request_memo_of",
]

#: How many live conversations' params are kept at most (each about the size of its request
#: body): well above the sessions a runtime keeps open (``max_open_sessions``, 128).
CONVERSATIONS_KEPT = 1024

Params = list[Any]
Key = tuple[Any, ...]


class Conversion(Protocol):
    """One provider's conversion of a request's messages, as the memo needs it."""

    def whole(self, messages: Sequence[Any]) -> tuple[Params, Taken]:
        """The params of ``messages`` and the tool-call ids the conversion took, each with
        the index of the first param it appears in or of the first message that took it
        (``Taken``: a cut after that param or message counts it as taken)."""
        ...

    def part(self, units: Sequence[Any]) -> Params:
        """The params of ``units`` (messages that start with a unit) converted alone."""
        ...

    def clean(self, unit: Sequence[Any], taken: Callable[[str], bool]) -> bool:
        """Whether ``unit`` (a message that is not a tool result, then the results after it)
        converts alone as it would after the part before the cut, whose ids ``taken``
        answers."""
        ...

    def joins(self, before: Any, after: Any) -> bool:
        """Whether the param ``after`` merges into the param ``before`` it."""
        ...

    def settled(self, params: Params) -> int:
        """How many leading params stay as they are whatever a later request adds (all of
        them, unless a param depends on being near the end: Anthropic's active tool turn
        keeps its thinking when thinking is off, and loses it once another turn follows)."""
        ...


class Taken(NamedTuple):
    """Tool-call ids a conversion took: id → the first param it appears in, id → the first
    message that took it (a turn that makes no param may still take ids)."""

    by_param: dict[str, int]
    by_message: dict[str, int]


class _Strong:
    """A first message that cannot be weakly referenced, held (the memo's bound drops it)."""

    __slots__ = ("message",)

    def __init__(self, message: Any) -> None:
        self.message = message

    def __call__(self) -> Any:
        return self.message


class Resuming(Conversion, Protocol):
    """What a :class:`Conversion` may add: going on from an earlier request's end or last
    prompt with the state its conversion had there, so what a request adds converts as in
    place whether or not it is clean (an id rule whose every id depends on all the earlier
    ones)."""

    def carried(self) -> Any:
        """The state at the end of what ``whole`` converted last."""
        ...

    def resume(self, carried: Any, units: Sequence[Any]) -> tuple[Params, dict[str, int]]:
        """The params of ``units`` (messages that start with a unit) after those ``carried``
        saw, as in place, and the tool-call ids taken for them, each with the index of the
        first of ``units`` that took it; ``carried`` moves on past them."""
        ...

    def copied(self, carried: Any) -> Any:
        """A copy of ``carried`` that ``resume`` on either leaves the other as it is (kept
        at a request's last prompt, where the next turn's first request goes on from)."""
        ...


class _Conversation:
    __slots__ = ("carried", "cuts", "first", "inputs", "key", "params", "stateful", "taken")

    def __init__(
        self,
        key: Key,
        first: Callable[[], Any],
        inputs: list[Any],
        params: Params,
        taken: Taken,
    ) -> None:
        self.key = key
        #: the first message, weakly: it says how long the conversation lives
        self.first = first
        #: the request's messages, the first one not held (``None``: ``first`` says it)
        self.inputs = inputs
        self.params = params
        #: (messages, params): where the params of ``inputs[:messages]`` end, at each cut
        self.cuts: list[tuple[int, int]] = []
        self.taken = taken
        #: the conversion's states (``Resuming``) at positions of ``inputs`` where the next
        #: request may go on from: its end, its last prompt; kept once a unit was not clean
        #: (``stateful``), since keeping them costs a copy of the state at every turn
        self.carried: dict[int, Any] = {}
        self.stateful = False


class RequestMemo:
    """The previous request's messages and params of each live conversation (module
    docstring).

    One per provider instance, used on one event loop."""

    def __init__(self, kept: int = CONVERSATIONS_KEPT) -> None:
        self._kept = kept
        self._conversations: OrderedDict[int, _Conversation] = OrderedDict()

    def __len__(self) -> int:
        """How many conversations are kept (those whose first message still lives)."""
        return len(self._conversations)

    def convert(self, messages: Sequence[Any], key: Key, conversion: Conversion) -> Params:
        """``conversion.whole(messages)``'s params, or the previous params up to a cut plus
        the params of the clean units after it, or of what follows a state carried there
        (the same params). ``key`` names everything else the params depend on (the model,
        its switches). Not to be changed by the caller."""
        if not messages:
            return conversion.whole(messages)[0]
        first = messages[0]
        head = id(first)
        known = self._conversations.get(head)
        stateful = False
        if known is not None and known.first() is first and known.key == key:
            params = _appended(known, messages, conversion)
            if params is not None:
                self._conversations.move_to_end(head)
                return params
            stateful = known.stateful
        resuming = _resuming(conversion) if stateful else None
        if resuming is not None:
            params, taken, carried = _whole_carried(messages, resuming)
        else:
            (params, taken), carried = conversion.whole(messages), {}
        conversation = _Conversation(key, self._held(first), _inputs(messages), params, taken)
        conversation.carried = carried
        conversation.stateful = stateful
        _add_end_cuts(conversation, messages, conversion)
        self._conversations[head] = conversation
        self._conversations.move_to_end(head)
        while len(self._conversations) > self._kept:
            self._conversations.popitem(last=False)
        return params

    def _held(self, first: Any) -> Callable[[], Any]:
        """``first`` weakly, its conversation dropped once it is gone, as a
        ``weakref.WeakValueDictionary`` drops an entry (held when it cannot be weakly
        referenced)."""
        head, conversations = id(first), self._conversations

        def gone(ref: weakref.ref[Any]) -> None:
            known = conversations.get(head)
            if known is not None and known.first is ref:  # not a later one at that address
                del conversations[head]

        try:
            return weakref.ref(first, gone)
        except TypeError:
            return _Strong(first)


def _resuming(conversion: Conversion) -> Resuming | None:
    """``conversion`` when it carries its state from one request to the next."""
    if all(hasattr(conversion, name) for name in ("carried", "resume", "copied")):
        return conversion  # type: ignore[return-value]  # a Conversion with all three
    return None


def _whole_carried(
    messages: Sequence[Any], conversion: Resuming
) -> tuple[Params, Taken, dict[int, Any]]:
    """``whole(messages)`` through a conversion that carries its state, with the states at
    the end and at the request's last prompt (``_prompt_split``): converted up to that
    prompt, then on from there (the same params, unless what follows merges into what is
    before or changes it: then at once, with the state at the end only)."""
    whole = conversion.whole
    split = _prompt_split(messages, 1)
    if split is not None:
        head, taken = whole(messages[:split])
        if conversion.settled(head) == len(head):
            state = conversion.carried()
            at_prompt = conversion.copied(state)
            tail, given = conversion.resume(state, messages[split:])
            if not (head and tail and conversion.joins(head[-1], tail[0])):
                by_message = taken.by_message
                for call_id, index in given.items():  # the head's ids were taken first
                    by_message.setdefault(call_id, split + index)
                return head + tail, taken, {split: at_prompt, len(messages): state}
    params, taken = whole(messages)
    return params, taken, {len(messages): conversion.carried()}


def _prompt_split(messages: Sequence[Any], start: int) -> int | None:
    """The request's last prompt when it is at ``start`` or after: where a state is kept for
    the next turn's first request, which goes on from there (the session resends the
    previous turn as copies); else ``None``."""
    prompt = len(messages) - 1
    while prompt >= start and type(messages[prompt]) is not UserMessage:
        prompt -= 1
    return prompt if prompt >= start else None


def _inputs(messages: Sequence[Any]) -> list[Any]:
    """What a conversation keeps of a request's messages: all but the first (``first``)."""
    inputs = list(messages)
    inputs[0] = None
    return inputs


def _add_end_cuts(
    conversation: _Conversation, messages: Sequence[Any], conversion: Conversion
) -> None:
    """Cuts at the start of the request's last prompt, at the start of its last unit and at
    its end. The next request may resend the last unit as a copy (a tool group an older
    Claude model's sanitizer hands back without its thinking); the next turn resends the
    whole turn (the session's copies, and an older Claude model's without their thinking).
    The params before such a start are final there when what follows, converted alone, ends
    the params unchanged (nothing merged across, no id rewritten)."""
    params = conversation.params
    settled = conversion.settled(params)
    start = len(messages)
    while start > 0 and type(messages[start - 1]) is ToolResultMessage:
        start -= 1
    start -= 1  # the last unit's first message
    prompt = start
    while prompt > 0 and type(messages[prompt]) is not UserMessage:
        prompt -= 1
    if 2 * (len(messages) - prompt) > len(messages):
        prompt = start  # a turn longer than the history before it: not worth converting twice
    cuts = conversation.cuts
    for position in sorted({prompt, start}):
        if position >= 1 and (not cuts or position > cuts[-1][0]):  # in order, once
            tail = conversion.part(messages[position:])
            kept = len(params) - len(tail)
            if 0 <= kept <= settled and params[kept:] == tail:
                cuts.append((position, kept))
    if (not cuts or len(messages) > cuts[-1][0]) and len(params) <= settled:
        cuts.append((len(messages), len(params)))


def _appended(
    known: _Conversation, messages: Sequence[Any], conversion: Conversion
) -> Params | None:
    """The params of ``messages`` from ``known``'s up to its last cut the request shares and
    those of what follows, going on from the state carried at the cut (``_resumed``) or
    clean units (and ``known`` moved on to them), or ``None``."""
    inputs = known.inputs
    inputs[0] = messages[0]  # the caller checked it: for the scan only (it is held weakly)
    try:
        shared = shared_prefix_length(inputs, messages)
    finally:
        inputs[0] = None
    cuts = known.cuts
    used = len(cuts) - 1  # the last cut within what is shared (cuts are in order)
    while used >= 0 and cuts[used][0] > shared:
        used -= 1
    if used < 0:
        return None
    count, kept = cuts[used]  # at the end of ``messages``: a request sent again, or cut short
    units = _units(messages[count:])
    if units is None:
        return None
    if not units and conversion.settled(known.params[:kept]) < kept:
        return None  # converted with a turn after it, which now ends the request
    by_param, by_message = known.taken
    resumed = _resumed(known, messages, count, conversion) if units and known.stateful else None
    carried: dict[int, Any] | None
    if resumed is not None:
        new, added, carried = resumed
    else:
        # the states up to the cut hold (what is before it is shared), not the later ones
        carried = (
            {at: state for at, state in known.carried.items() if at <= count}
            if known.stateful
            else None
        )
        added = {}

        def taken(call_id: str) -> bool:
            return (
                call_id in added
                or by_param.get(call_id, kept) < kept
                or by_message.get(call_id, count) < count
            )

        position = count
        for unit in units:
            if not conversion.clean(unit, taken):
                known.stateful = True  # the next whole conversion keeps the states
                return None
            for call_id in _call_ids(unit[0]):
                added.setdefault(call_id, position)
            position += len(unit)
        new = conversion.part(messages[count:]) if units else []
    if kept and new and conversion.joins(known.params[kept - 1], new[0]):
        return None
    if resumed is None:
        by_message.update(added)  # clean: none of them taken before the cut
    else:
        for call_id, position in added.items():  # an entry at or after the cut: a dropped one
            if by_message.get(call_id, count) >= count:
                by_message[call_id] = position
    known.params = params = known.params[:kept] + new
    known.inputs = _inputs(messages)
    if carried is not None:
        known.carried = dict(sorted(carried.items())[-2:])  # the last prompt's and the end's
    del cuts[used + 1 :]  # the ones after it are the previous request's
    if len(units) == 1:  # its start is the cut just used: the last unit's
        if len(params) <= conversion.settled(params):
            known.cuts.append((len(messages), len(params)))
    else:
        _add_end_cuts(known, messages, conversion)
    return params


def _resumed(
    known: _Conversation, messages: Sequence[Any], count: int, conversion: Conversion
) -> tuple[Params, dict[str, int], dict[int, Any]] | None:
    """The params of ``messages[count:]`` going on from the state carried at ``count``, the
    ids taken for them (by message) and the states to keep (those before the cut, one at
    the request's last prompt if it is among what is added, one at its end); ``None`` when
    no state is carried there. The state used moves on: the cut keeps none."""
    state = known.carried.get(count)
    resuming = _resuming(conversion)
    if state is None or resuming is None:
        return None
    carried = {at: kept for at, kept in known.carried.items() if at < count}
    split = _prompt_split(messages, max(count, 1))
    if split is None:
        new, given = resuming.resume(state, messages[count:])
    else:  # a prompt among what is added: a state kept there for the next turn
        new, given = [], {}
        if split > count:
            new, given = resuming.resume(state, messages[count:split])
        carried[split] = resuming.copied(state)
        tail, more = resuming.resume(state, messages[split:])
        new += tail
        for call_id, index in more.items():
            given.setdefault(call_id, split - count + index)
    carried[len(messages)] = state
    return new, {call_id: count + index for call_id, index in given.items()}, carried


def _units(added: Sequence[Any]) -> list[list[Any]] | None:
    """``added`` split into units (a message that is not a tool result, then the results
    after it), or ``None`` when it starts with a result (a late one: its call's synthetic
    result is in the params before)."""
    units: list[list[Any]] = []
    for message in added:
        if type(message) is ToolResultMessage:
            if not units:
                return None
            units[-1].append(message)
        else:
            units.append([message])
    return units


def _call_ids(message: Any) -> list[str]:
    if type(message) is not AssistantMessage:
        return []
    return [block.id for block in message.content if isinstance(block, ToolCall)]


def request_memo_of(provider: Any) -> RequestMemo:
    """``provider``'s memo, made on first use and kept in its ``__dict__``: one per provider
    instance, so per runtime and event loop."""
    memo: RequestMemo | None = provider.__dict__.get("_request_memo")
    if memo is None:
        memo = provider.__dict__["_request_memo"] = RequestMemo()
    return memo
