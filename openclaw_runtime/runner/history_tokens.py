"""The prompt-token estimate of a session's history, kept as a running sum per session.

Before every prompt an attempt estimates what the request would cost
(``context.tokens.estimate_llm_boundary_token_pressure`` over the whole history). The
per-message estimates are memoized, yet adding up 10 000 of them is still a loop over the
history at every turn, and the first turn after a restart has 10 000 fresh message objects
to measure (the largest single cost of that turn). This keeps, per session object, the
history last estimated and the running sums of its messages' estimates:

* a history that only grew (the same message objects first, as a session kept open gives
  them) costs only its new messages;
* a session whose replay checkpoint recorded the estimate of its prefix
  (``transcript.replay_checkpoint``, under ``TOKEN_SCHEME``) starts from that sum instead of
  measuring the prefix; and the sums are recorded with the next checkpoint.

The result is always what ``estimate_llm_boundary_token_pressure`` gives for the same
messages (tested against it); any other history is summed afresh.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from .._version import __version__
from ..context.tokens import boundary_token_pressure, estimate_message_token_pressure
from ..transcript.replay_checkpoint import ReplayCheckpointer

__all__ = ["TOKEN_SCHEME", "HistoryTokens", "estimate_prompt_tokens"]

#: What recorded token sums were measured with: the character-based estimator of this
#: package version (its rules may change between versions).
TOKEN_SCHEME = f"boundary-chars/{__version__}"

Seed = Callable[[Sequence[Any]], "tuple[int, int] | None"]


class HistoryTokens:
    """Running sums of the token estimates of one growing history."""

    def __init__(self) -> None:
        self._messages: list[Any] = []
        #: ``_sums[i]``: the estimate of ``_messages[: _base + i]``; the first ``_base``
        #: messages came with their total only (a checkpoint)
        self._base = 0
        self._sums = [0]
        self._seeded = False

    def total(self, messages: Sequence[Any], seed: Seed | None = None) -> int:
        """The sum of ``estimate_message_token_pressure`` over ``messages``. ``seed`` (asked
        once, on the first history) may vouch for a prefix: ``(count, tokens)``."""
        known = self._messages
        count = len(known)
        if not count or len(messages) < count or _listed(messages[:count]) != known:
            self._restart(messages, seed)
            count = len(self._messages)
        sums = self._sums
        running = sums[-1]
        added = messages[count:]
        for message in added:
            running += estimate_message_token_pressure(message)
            sums.append(running)
        self._messages.extend(added)
        return running

    def prefix(self, messages: Sequence[Any]) -> int | None:
        """The estimate of ``messages`` if they are a prefix of the history last summed at
        least as long as the vouched-for part (``None``: not known here)."""
        count = len(messages)
        if count < self._base or count > len(self._messages):
            return None
        if _listed(messages) != self._messages[:count]:
            return None
        return self._sums[count - self._base]

    def _restart(self, messages: Sequence[Any], seed: Seed | None) -> None:
        self._messages, self._base, self._sums = [], 0, [0]
        if self._seeded or seed is None:
            return
        self._seeded = True
        found = seed(messages)
        if found is not None:
            count, tokens = found
            self._messages, self._base, self._sums = list(messages[:count]), count, [tokens]


def _listed(messages: Sequence[Any]) -> list[Any]:
    # list equality is an identity check first, element by element, in C: cheap for the
    # same message objects (equal messages have equal estimates, so equality suffices)
    return messages if isinstance(messages, list) else list(messages)


_STATES: weakref.WeakKeyDictionary[Any, HistoryTokens] = weakref.WeakKeyDictionary()


def _state_of(session: Any) -> tuple[HistoryTokens, Seed | None]:
    checkpointer = getattr(session, "replay_checkpoint", None)
    if isinstance(checkpointer, ReplayCheckpointer) and not checkpointer.enabled:
        # a disabled checkpointer (memory, Redis) never seeds nor records: the same as none,
        # without a recorder closure kept on it and a seed closure per request
        checkpointer = None
    try:
        state = _STATES.get(session)
        if state is None:
            state = _STATES[session] = HistoryTokens()
            if isinstance(checkpointer, ReplayCheckpointer):
                checkpointer.prefix_tokens = _recorder(state)
    except TypeError:  # not weakly referenceable or not hashable: nothing kept
        return HistoryTokens(), None
    if not isinstance(checkpointer, ReplayCheckpointer):
        return state, None
    return state, lambda messages: checkpointer.known_tokens(messages, TOKEN_SCHEME)


def _recorder(state: HistoryTokens) -> Callable[[Sequence[Any]], tuple[str, int] | None]:
    def prefix_tokens(messages: Sequence[Any]) -> tuple[str, int] | None:
        tokens = state.prefix(messages)
        return None if tokens is None else (TOKEN_SCHEME, tokens)

    return prefix_tokens


def estimate_prompt_tokens(
    session: Any, messages: Sequence[Any], *, system_prompt: str | None, prompt: str
) -> int:
    """``estimate_llm_boundary_token_pressure(messages, ...)`` for the history of
    ``session``, from its running sums (module docstring)."""
    state, seed = _state_of(session)
    history = state.total(messages, seed)
    return boundary_token_pressure(history, system_prompt=system_prompt, prompt=prompt)
