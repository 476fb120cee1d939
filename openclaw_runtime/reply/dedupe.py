"""Messaging-tool dedupe: remember what a messaging tool sent during the run.

When the model answers through a messaging tool (``message`` with ``action=send``, a
``sessions_send`` with a message…) and then repeats that text as its reply, the user would get
it twice. OpenClaw's subscriber (spec 004 §4.3) tracks those sends as the tools run:

* a send is *pending* from ``tool_execution_start`` (keyed by tool call id) and is
  *committed* only when that tool ends without error — a failed send never swallows the reply;
* committed texts are kept (at most ``MAX_TRACKED_SENDS``, the oldest dropped) and are what
  block replies and the final reply are compared with.

Which tools count: ``DEFAULT_MESSAGING_TOOLS`` plus any names given. The text of a send is the
first non-blank string among the arguments ``message``, ``text``, ``content``; the ``message``
tool counts only for its sending actions (``send``, ``thread-reply``/``reply``, or no action).
The comparison itself (normalized, length and overlap rules) is the runner's
``is_messaging_tool_duplicate``; this module only decides what was sent.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any, Final

__all__ = [
    "DEFAULT_MESSAGING_TOOLS",
    "MAX_TRACKED_SENDS",
    "MessagingToolTracker",
    "messaging_send_text",
]

DEFAULT_MESSAGING_TOOLS: Final = frozenset({"message", "sessions_send"})
MAX_TRACKED_SENDS: Final = 200
_TEXT_KEYS: Final = ("message", "text", "content")
_SEND_ACTIONS: Final = frozenset({"send", "thread-reply", "thread_reply", "reply"})


def messaging_send_text(
    tool_name: str, args: Any, *, messaging_tools: Iterable[str] = DEFAULT_MESSAGING_TOOLS
) -> str | None:
    """The text this tool call sends to a user, or None when it is not a messaging send."""
    names = (
        messaging_tools
        if messaging_tools is DEFAULT_MESSAGING_TOOLS
        else {n.strip().lower() for n in messaging_tools}
    )
    return _send_text((tool_name or "").strip().lower(), args, names)


def _send_text(name: str, args: Any, messaging_tools: AbstractSet[str]) -> str | None:
    """``messaging_send_text`` for a normalized name against normalized tool names."""
    if name not in messaging_tools or not isinstance(args, Mapping):
        return None
    if name == "message":
        action = args.get("action")
        if action is not None and str(action).strip().lower() not in _SEND_ACTIONS:
            return None
    for key in _TEXT_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


class MessagingToolTracker:
    """Pending and committed messaging-tool sends of one run."""

    def __init__(self, messaging_tools: Iterable[str] = DEFAULT_MESSAGING_TOOLS) -> None:
        self.messaging_tools = (
            DEFAULT_MESSAGING_TOOLS  # already normalized: not a set per run
            if messaging_tools is DEFAULT_MESSAGING_TOOLS
            else frozenset(n.strip().lower() for n in messaging_tools)
        )
        # made with the first messaging send (most runs make none)
        self._pending: dict[str, str] | None = None
        self._committed: deque[str] | None = None

    @property
    def sent_texts(self) -> list[str]:
        """Committed sends, oldest first."""
        return list(self._committed or ())

    def did_send(self) -> bool:
        """At least one send was committed (OpenClaw's ``didSendViaMessagingTool``)."""
        return bool(self._committed)

    def tool_started(self, tool_call_id: str, tool_name: str, args: Any) -> None:
        """A tool call began: remember its text if it is a messaging send."""
        # the tracker's names are normalized once, not per tool call
        text = _send_text((tool_name or "").strip().lower(), args, self.messaging_tools)
        if text is not None:
            if self._pending is None:
                self._pending = {}
            self._pending[tool_call_id] = text

    def tool_ended(self, tool_call_id: str, *, is_error: bool) -> None:
        """A tool call ended: commit its send when it succeeded, forget it otherwise."""
        text = None if self._pending is None else self._pending.pop(tool_call_id, None)
        if text is not None and not is_error:
            if self._committed is None:
                self._committed = deque(maxlen=MAX_TRACKED_SENDS)
            self._committed.append(text)
