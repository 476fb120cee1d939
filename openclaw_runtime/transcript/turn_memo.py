"""Turn validation without re-reading the whole history at every request.

The generic replay validator (``replay.validate_replay_turns``: Gemini's assistant merge,
strict alternation — dangling tool calls stripped, consecutive user turns merged) is a pass
over the whole history, run before every model request: in a tool loop of K calls, K passes
over a history that grows by a tool group each time, and one at every turn of a long session
(≈ 50 ms at 10,000 messages). :class:`TurnValidationMemo` keeps the previous request's input
and output, for as long as its session is open (``runner.projection_memo``). The validator
reads a history left to right, and what it makes of a message depends on what follows only
in three ways: an assistant turn merges into the one before it, a user turn into the one
before it, and an assistant turn's calls are kept when results answer them before the next
assistant turn. So where a request resends the previous one's messages (the very same
objects) up to a *stable cut* and adds messages the validator leaves as they are, the answer
is the previous one up to the cut followed by those messages.

* A **stable cut** (:func:`_cut`) comes after a tool result or a user message with an
  assistant turn (or nothing) after it in the previous request, or after an assistant turn
  without calls with no assistant turn after it: nothing there merges across the cut, and
  every scan for results stopped before it.
* The **added part** (:func:`_left_as_is`) holds whole clean tool groups
  (``loop_tail.clean_tail``: each assistant turn's calls answered, in order, right after it),
  assistant turns without calls and user messages, no two assistant or two user messages in a
  row (counting the message before the cut). A turn that thinks is all-or-nothing for the
  validator (every call answered by its id *and* its tool name), so a group whose turn holds
  thinking blocks counts when each of its results names the tool of its call.

The previous answer lines up with its request by position where the validator merged
nothing (``_aligned_from``: from there on, one message of the answer per message). That
covers a tool loop's requests (each adds a group), a turn's second request (a group after
the prompt), an older Claude model's requests (its sanitizer hands back the previous last
group as a copy without thinking: the cut moves before it), and a kept-open session's next
turn: at an attempt's end the memo keeps the part made of the session's own messages
(:meth:`TurnValidationMemo.keep_leading`), so the next turn adds the previous one and its
prompt. Anything else runs the validator in full.

The memo reaches the ``validate_replay_turns`` hook on the history list itself
(:class:`MemoizedTurns`), so the hook is still called (and any plugin that answers first
still answers). It serves the two validators whose rules are the ones above: the generic one
(``replay.validate_replay_turns``, the built-in hook) and, with ``strict=True``, the strict
one (``replay.validate_strict_replay_turns``, the Anthropic plugin's rule); what it holds is
always the answer of the validator asked, and asking the other one starts it over.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._prefix import shared_prefix_length
from .loop_tail import MessageFacts, clean_tail, message_facts
from .policy import TranscriptPolicy
from .replay import validate_replay_turns, validate_strict_replay_turns
from .tool_calls import extract_tool_calls_from_assistant
from .wire import role_of, wget

__all__ = ["MemoizedTurns", "TurnValidationMemo"]


class TurnValidationMemo:
    """``validate_replay_turns(messages, policy)``, reusing the previous request's answer."""

    __slots__ = ("_aligned_from", "_inputs", "_offset", "_outputs", "_policy", "_strict")

    def __init__(self) -> None:
        self._inputs: Sequence[Any] = ()  # no containers until the first call
        self._outputs: Sequence[Any] = ()
        self._policy: TranscriptPolicy | None = None
        self._strict = False  # which validator's answers it holds
        #: from this input position on, the answer for ``_inputs[:p]`` is
        #: ``_outputs[: p + _offset]`` (module docstring)
        self._aligned_from = 0
        self._offset = 0

    def __call__(
        self, messages: Sequence[Any], policy: TranscriptPolicy, *, strict: bool = False
    ) -> list[Any]:
        """``validate_replay_turns(messages, policy)``, or with ``strict``
        ``validate_strict_replay_turns(messages, policy)``."""
        if strict != self._strict:
            self._inputs, self._strict = (), strict  # the other validator's answers
        seen = self._inputs
        if seen and (policy is self._policy or policy == self._policy):
            shared = shared_prefix_length(seen, messages)
            follows = (
                _cut(messages[shared - 1], seen[shared] if shared < len(seen) else None)
                if self._aligned_from <= shared < len(messages) and shared
                else None
            )
            if follows is not None:
                added = list(messages[shared:])
                if _left_as_is(added, follows):
                    out = [*self._outputs[: shared + self._offset], *added]
                    self._inputs, self._outputs = list(messages), out
                    return list(out)  # the caller's own list, as below
        validate = validate_strict_replay_turns if strict else validate_replay_turns
        out = list(validate(messages, policy))
        self._inputs, self._outputs, self._policy = list(messages), out, policy
        # positions match from the start when the validator merged nothing, else only whole
        self._aligned_from = 0 if len(out) == len(messages) else len(messages)
        self._offset = len(out) - len(messages) if self._aligned_from else 0
        return list(out)  # the caller's own list: changing it leaves the memo alone

    def keep_leading(self, messages: Sequence[Any]) -> None:
        """Keep only the answer for the leading messages of the previous request that are
        ``messages`` (the very objects: the session's own, at an attempt's end), when a
        stable cut follows them; else forget everything."""
        seen = self._inputs
        kept = shared_prefix_length(seen, messages)
        if kept == len(seen):
            return
        if kept and kept >= self._aligned_from and _cut(seen[kept - 1], seen[kept]) is not None:
            self._inputs = list(seen[:kept])
            self._outputs = list(self._outputs[: kept + self._offset])
        else:
            self._inputs, self._outputs = (), ()


def _cut(last: Any, following: Any) -> str | None:
    """The role the added part follows when a cut after ``last`` is stable, the previous
    request having gone on with ``following`` (``None``: it ended there); else ``None``
    (module docstring)."""
    role = role_of(last)
    after = None if following is None else role_of(following)
    if role in ("toolResult", "user"):
        return role if after in (None, "assistant") else None
    # (an assistant turn after it would have merged with it, which ``_aligned_from`` rules
    # out as well)
    if role == "assistant" and after != "assistant" and not extract_tool_calls_from_assistant(last):
        return role
    return None


def _left_as_is(added: Sequence[Any], follows: str) -> bool:
    """Whether the validator leaves ``added`` as it is after a stable cut following a
    ``follows`` message (module docstring)."""
    facts = [message_facts(message, None) for message in added]
    previous = follows
    index = 0
    count = len(facts)
    while index < count:
        found = facts[index]
        role = found.role
        if role == "user" and previous != "user":
            previous = "user"
            index += 1
        elif role == "assistant" and previous != "assistant":
            calls = len(found.ids)
            if not calls:
                if extract_tool_calls_from_assistant(added[index]):
                    return False  # calls the facts do not count (not a clean turn)
                previous = "assistant"
                index += 1
                continue
            group = slice(index, index + calls + 1)
            if clean_tail(facts[group], None, thinking=True) is None:
                return False
            if not _names_answered(added[group], facts[group]):
                return False
            previous = "toolResult"
            index += calls + 1
        else:
            return False  # a merge, a result outside its group, another role
    return True


def _names_answered(groups: Sequence[Any], facts: Sequence[MessageFacts]) -> bool:
    """Whether every call of a thinking turn among clean tool ``groups`` is answered by a
    result naming its tool (the validator keeps such a turn only then; module docstring)."""
    for index, found in enumerate(facts):
        if not found.thinking:
            continue
        calls = extract_tool_calls_from_assistant(groups[index])
        for offset, call in enumerate(calls, start=1):
            if wget(groups[index + offset], "toolName") != call.name:
                return False
    return True


class MemoizedTurns(list[Any]):
    """A history on its way to the ``validate_replay_turns`` hook, carrying the memo of the
    session it belongs to (the built-in validator and the plugins whose rule is the core's
    use it; to anyone else it is a list)."""

    __slots__ = ("turn_memo",)

    def __init__(self, messages: Sequence[Any], memo: TurnValidationMemo) -> None:
        super().__init__(messages)
        self.turn_memo = memo
