"""The default ``convert_to_llm`` of one loop run, converting only what each request added.

The kernel converts the whole history before every model request, and inside a tool loop each
request resends the previous one's messages plus a tool group: converting all of them again made
a loop of K calls cost K² conversions. :class:`PrefixConverter` keeps the previous request's
input (the very message objects) and output; a request that starts with those objects converts
only the messages after them. Messages are not edited in place once in the history (the
runtime replaces a message object to change it), so the same objects convert the same way;
anything else (a shorter history, another object anywhere in the prefix) converts in full.
The converted prefix is reused as objects: a custom or summary message becomes the same user
message at every request of the run, equal to what a fresh conversion gives.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from .types import default_convert_to_llm

__all__ = ["PrefixConverter"]


class PrefixConverter:
    """``default_convert_to_llm`` that reuses the converted prefix of the previous call."""

    __slots__ = ("_inputs", "_outputs")

    def __init__(self) -> None:
        self._inputs: Sequence[Any] = ()  # no containers until the first call
        self._outputs: Sequence[Any] = ()

    def __call__(self, messages: list[Any]) -> list[Any]:
        seen = self._inputs
        if seen and len(messages) >= len(seen) and all(map(operator.is_, seen, messages)):
            out = [*self._outputs, *default_convert_to_llm(messages[len(seen) :])]
        else:
            out = default_convert_to_llm(messages)
        self._inputs = list(messages)
        self._outputs = out
        return list(out)  # the caller's own list: changing it leaves the kept prefix alone
