"""Turn validation inside a tool loop without re-reading the whole history at every request.

The generic replay validator (``replay.validate_replay_turns``: Gemini's assistant merge,
strict alternation — dangling tool calls stripped, consecutive user turns merged) is a pass
over the whole history, run before every model request: in a tool loop of K calls, K passes
over a history that grows by a tool group each time. :class:`TurnValidationMemo` keeps the
previous request's input and output. When a request's history is that input (the very same
message objects) ending with a tool result or a user message (the turn's prompt, at its
second request), followed by whole clean tool groups (``loop_tail.clean_tail``: each
assistant turn's calls answered, in order, right after it), the validator's answer is the
previous output followed by those groups unchanged:

* no assistant merge: the groups alternate assistant turn and results, and the previous input
  ends with a result or a user message;
* no dangling call: a call of a group is answered by the result right after it, and an earlier
  turn's scan for its results stops at the next assistant turn, where the groups begin
  (having read the same messages before it);
* no user merge: the groups hold no user message, and start with an assistant turn.

The history need not resend *every* message of the previous one: where an older Claude
model's sanitizer output replaces the previous request's last tool group by its copy
without thinking, the two share the messages up to that group's assistant turn. The
validator's answer for a shared part that ends with a tool result (or a user message) where
an assistant turn followed is the same whatever follows (the three points above), so it is
the matching part of the previous answer, found by position while the validator merged
nothing there (``_aligned_from``: the answer has one message per message of the history
from there on).

A turn that thinks (a reasoning model: Claude's signed thinking before its calls) is
all-or-nothing there: every call must be answered by its id *and* its tool name. So a group
whose turn holds thinking blocks (otherwise clean: ``MessageFacts.thinking``) is taken too
when each of its results names the tool of its call; one that does not runs the validator.

Anything else runs the validator in full. The memo reaches the ``validate_replay_turns`` hook
on the history list itself (:class:`MemoizedTurns`), so the hook is still called (and any
plugin that answers first still answers). It serves the two validators whose rules are the
ones above: the generic one (``replay.validate_replay_turns``, the built-in hook) and, with
``strict=True``, the strict one (``replay.validate_strict_replay_turns``, the Anthropic
plugin's rule); what it holds is always the answer of the validator asked, and asking the
other one starts it over.
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

#: What a shared part may end with for its answer to hold whatever follows (module docstring).
_ENDS = frozenset({"toolResult", "user"})


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
        if strict is not self._strict:
            self._inputs, self._strict = (), strict  # the other validator's answers
        seen = self._inputs
        if seen and (policy is self._policy or policy == self._policy):
            shared = shared_prefix_length(seen, messages)
            if (
                0 < shared < len(messages)
                and shared >= self._aligned_from
                and role_of(messages[shared - 1]) in _ENDS
                and (shared == len(seen) or role_of(seen[shared]) == "assistant")
            ):
                added = list(messages[shared:])
                facts = [message_facts(m, None) for m in added]
                tail = clean_tail(facts, None, thinking=True)
                if tail is not None and _names_answered(added, facts):
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
    attempt it belongs to (the built-in validator uses it; to anyone else it is a list)."""

    __slots__ = ("turn_memo",)

    def __init__(self, messages: Sequence[Any], memo: TurnValidationMemo) -> None:
        super().__init__(messages)
        self.turn_memo = memo
