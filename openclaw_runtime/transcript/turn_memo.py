"""Turn validation inside a tool loop without re-reading the whole history at every request.

The generic replay validator (``replay.validate_replay_turns``: Gemini's assistant merge,
strict alternation — dangling tool calls stripped, consecutive user turns merged) is a pass
over the whole history, run before every model request: in a tool loop of K calls, K passes
over a history that grows by a tool group each time. :class:`TurnValidationMemo` keeps the
previous request's input and output. When a request's history is that input (the very same
message objects) ending with a tool result, followed by whole clean tool groups
(``loop_tail.clean_tail``: each assistant turn's calls answered, in order, right after it, no
thinking), the validator's answer is the previous output followed by those groups unchanged:

* no assistant merge: the groups alternate assistant turn and results, and the previous input
  ends with a result;
* no dangling call: a call of a group is answered by the result right after it, and an earlier
  turn's scan for its results stops at the next assistant turn, where the groups begin;
* no user merge: the groups hold no user message.

Anything else runs the validator in full. The memo reaches the built-in ``validate_replay_turns``
hook on the history list itself (:class:`MemoizedTurns`), so the hook is still called (and any
plugin that answers first still answers); only the built-in reads the memo, so what it holds is
always the built-in's own answer.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from .loop_tail import clean_tail, message_facts
from .policy import TranscriptPolicy
from .replay import validate_replay_turns
from .wire import role_of

__all__ = ["MemoizedTurns", "TurnValidationMemo"]


class TurnValidationMemo:
    """``validate_replay_turns(messages, policy)``, reusing the previous request's answer."""

    __slots__ = ("_inputs", "_outputs", "_policy")

    def __init__(self) -> None:
        self._inputs: Sequence[Any] = ()  # no containers until the first call
        self._outputs: Sequence[Any] = ()
        self._policy: TranscriptPolicy | None = None

    def __call__(self, messages: Sequence[Any], policy: TranscriptPolicy) -> list[Any]:
        seen = self._inputs
        if (
            seen
            and (policy is self._policy or policy == self._policy)
            and len(messages) > len(seen)
            and role_of(seen[-1]) == "toolResult"
            and all(map(operator.is_, seen, messages))
        ):
            added = list(messages[len(seen) :])
            if clean_tail([message_facts(m, None) for m in added], None) is not None:
                out = [*self._outputs, *added]
                self._remember(messages, out, policy)
                return list(out)  # the caller's own list, as below
        out = list(validate_replay_turns(messages, policy))
        self._remember(messages, out, policy)
        return list(out)  # the caller's own list: changing it leaves the memo alone

    def _remember(self, messages: Sequence[Any], out: list[Any], policy: TranscriptPolicy) -> None:
        self._inputs = list(messages)
        self._outputs = out
        self._policy = policy


class MemoizedTurns(list[Any]):
    """A history on its way to the ``validate_replay_turns`` hook, carrying the memo of the
    attempt it belongs to (the built-in validator uses it; to anyone else it is a list)."""

    __slots__ = ("turn_memo",)

    def __init__(self, messages: Sequence[Any], memo: TurnValidationMemo) -> None:
        super().__init__(messages)
        self.turn_memo = memo
