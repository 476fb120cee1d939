"""The default ``convert_to_llm`` of one loop run, converting only what each request added.

The kernel converts the whole history before every model request, and inside a tool loop each
request resends the previous one's messages plus a tool group: converting all of them again made
a loop of K calls cost K² conversions. :class:`PrefixConverter` keeps the previous request's
input (the very message objects) and output; a request converts only the messages after the
longest run of leading objects it shares with the previous one (all of them, in a loop).
Messages are not edited in place once in the history (the runtime replaces a message object
to change it), so the same objects convert the same way, and each converts on its own (to one
message or none), so what precedes the first other object is the previous output's start.
A sanitizer that hands back a fresh copy of a recent message (a tool result without its
details) therefore costs the messages from that copy on, not the whole history again.
The converted prefix is reused as objects: a custom or summary message becomes the same user
message at every request of the run, equal to what a fresh conversion gives.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

from .._prefix import shared_prefix_length, starts_with
from .interruption import convert_agent_message_to_llm

__all__ = ["PrefixConverter"]


class PrefixConverter:
    """``default_convert_to_llm`` that reuses the converted prefix of the previous call."""

    __slots__ = ("_dropped", "_inputs", "_outputs")

    def __init__(self) -> None:
        # the previous call's messages and what they converted to (never handed out: the
        # caller gets a copy, so both are cut and extended in place)
        self._inputs: list[Any] = []
        self._outputs: list[Any] = []
        #: positions of the inputs that converted to nothing, ascending (rarely any)
        self._dropped: list[int] = []

    def __call__(self, messages: list[Any]) -> list[Any]:
        inputs, outputs, dropped = self._inputs, self._outputs, self._dropped
        kept = len(inputs)
        # every earlier message again (each request of a tool loop): nothing to cut
        if not starts_with(messages, inputs):
            kept = self.keep_leading(messages)
        for index in range(kept, len(messages)):
            converted = convert_agent_message_to_llm(messages[index])
            if converted is None:
                dropped.append(index)
            else:
                outputs.append(converted)
        inputs.extend(messages[kept:])
        return list(outputs)  # the caller's own list: changing it leaves the kept prefix alone

    def keep_leading(self, messages: Sequence[Any]) -> int:
        """Keep only the leading run of the previous call's messages that ``messages`` starts
        with (the same objects); how many. A converter kept across the attempts of a session
        forgets the attempt's own messages with it at the attempt's end."""
        inputs = self._inputs
        kept = shared_prefix_length(inputs, messages) if inputs else 0
        if kept < len(inputs):  # the previous call's messages differ from ``kept`` on
            dropped = self._dropped
            cut = bisect_left(dropped, kept)  # the inputs before ``kept`` that gave nothing
            del dropped[cut:]
            del self._outputs[kept - cut :]
            del inputs[kept:]
        return kept
