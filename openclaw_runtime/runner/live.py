"""The registry of live runs: how a running turn is reached from outside it (seed 000 §3.1–3.2).

OpenClaw's runner keeps ``ACTIVE_EMBEDDED_RUNS`` (``runs.ts``): a map from session id to a
queue handle, plus a session key → session id map and waiters, so that
``queueEmbeddedPiMessage`` (steer), ``abortEmbeddedPiRun``, ``isEmbeddedPiRunActive``,
``isEmbeddedPiRunStreaming`` and ``waitForEmbeddedPiRunEnd`` can reach the run of a session.
This module is that registry for one host. A run registers a ``LiveRunHandle`` once it holds
its session and clears it (identity-checked: only the handle that was set) when it ends.

The handle owns the run's two kernel queues, the steering queue (drained at every turn
boundary) and the follow-up queue (drained when the run would end, reviving it), both
``one-at-a-time`` by default as in OpenClaw; the queues belong to the *run*, not to one
attempt, so a message queued while an attempt fails is drained by the retry. It also owns the
run's abort controller, and the flags OpenClaw's handle answers with (``streaming``,
``compacting``, ``stopped``). Whether a message may be queued is ``decide_live_message``, a
pure table.

A handle may also be fed from other processes: ``remote`` is the run's inbox in the steering
store (``live_inbox``); its messages are moved into the queues at the same drain points.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

import anyio

# The kernel's face, not its modules: ``agent.PendingMessageQueue`` and ``agent.QueueMode`` load
# when first read (``typing.get_type_hints``), not with the start-up path that loads this module.
import openclaw_runtime.agent as agent

from ..abort import AbortController, AbortSignal
from ..messages import TextContent, UserMessage
from ..redaction import package_logger

__all__ = [
    "LiveMessageKind",
    "LiveMessageReason",
    "LiveMessageResult",
    "LiveRunHandle",
    "LiveRunRegistry",
    "decide_live_message",
    "live_message",
    "validate_live_text",
]

logger = package_logger(logging.getLogger("openclaw_runtime.runner.live"))

LiveMessageKind: TypeAlias = Literal["steer", "follow_up"]
#: ``queued``: this process's run took it; ``queued_remote``: it waits in the run's inbox in
#: the steering store for a run of another process; the rest say why it was refused.
LiveMessageReason: TypeAlias = Literal[
    "queued", "queued_remote", "no_active_run", "compacting", "stopped"
]

#: What the steering store's inbox answers a remote message with (``live_inbox``).
RemoteDrain = Callable[[], Awaitable[list[tuple[LiveMessageKind, str]]]]


@dataclass(frozen=True, slots=True)
class LiveMessageResult:
    """What became of a ``steer`` / ``follow_up``: ``accepted`` (also its truth value), the
    session it was addressed to (None when nothing was found for a key), and ``reason``."""

    accepted: bool
    reason: LiveMessageReason
    session_id: str | None = None

    def __bool__(self) -> bool:
        return self.accepted


def decide_live_message(
    kind: LiveMessageKind, *, active: bool, compacting: bool, stopped: bool
) -> LiveMessageReason:
    """May a run take a message now? (OpenClaw's ``queueEmbeddedPiMessage`` refusals.)

    | active | stopped | compacting | kind      | answer          |
    | ------ | ------- | ---------- | --------- | --------------- |
    | no     | any     | any        | any       | no_active_run   |
    | yes    | yes     | any        | any       | stopped         |
    | yes    | no      | yes        | steer     | compacting      |
    | yes    | no      | yes        | follow_up | queued          |
    | yes    | no      | no         | any       | queued          |

    ``stopped``: the run made its last drain (its final turn found both queues empty), so a
    message now would never be read. A follow-up during a compaction is fine: it is read
    only when the run would end, after the compaction.
    """
    if not active:
        return "no_active_run"
    if stopped:
        return "stopped"
    if compacting and kind == "steer":
        return "compacting"
    return "queued"


def validate_live_text(text: object) -> str:
    """The text of a live message, or a clear error (not a str, or blank)."""
    if not isinstance(text, str):
        raise TypeError(f"a steered or follow-up message must be a str, got {type(text).__name__}")
    if not text.strip():
        raise ValueError("a steered or follow-up message must not be empty")
    return text


def live_message(text: str) -> UserMessage:
    """The user message a steered or follow-up text becomes."""
    return UserMessage(content=[TextContent(text=text)])


def _queue(mode: agent.QueueMode) -> agent.PendingMessageQueue:
    from ..agent.agent import PendingMessageQueue  # lazy: start-up time (the kernel)

    return PendingMessageQueue(mode)


class LiveRunHandle:
    """One registered run: its queues, its abort controller and what it is doing now."""

    def __init__(
        self,
        *,
        session_id: str,
        session_key: str | None,
        run_id: str,
        steering_mode: agent.QueueMode = "one-at-a-time",
        follow_up_mode: agent.QueueMode = "one-at-a-time",
        abort_signal: AbortSignal | None = None,
    ) -> None:
        self.session_id = session_id
        self.session_key = session_key
        self.run_id = run_id
        # the two queues are made by the first message (most runs are never steered)
        self._steering_mode, self._follow_up_mode = steering_mode, follow_up_mode
        self._steering: agent.PendingMessageQueue | None = None
        self._follow_ups: agent.PendingMessageQueue | None = None
        self.controller = AbortController()
        self._unlink = (
            abort_signal.add_callback(lambda: self.controller.abort(abort_signal.reason))
            if abort_signal is not None
            else None
        )
        #: an attempt's kernel loop is running (OpenClaw's ``isStreaming``)
        self.streaming = False
        #: a compaction is running (steering is refused meanwhile, as in OpenClaw)
        self.compacting = False
        #: the last drain found nothing: the run is ending and reads no more messages
        self.stopped = False
        #: the inbox of messages from other processes (``live_inbox``), if the store has one
        self.remote: RemoteDrain | None = None
        #: every message the queues handed to the kernel (the run maps them to entries); an
        #: empty tuple until the first one (most runs deliver none)
        self.delivered: Sequence[UserMessage] = ()
        # the run ended; the event for waiters is made by the first who asks (``ended``)
        self._is_ended = False
        self._ended: anyio.Event | None = None

    @property
    def steering(self) -> agent.PendingMessageQueue:
        """The steered messages waiting for the next turn boundary."""
        queue = self._steering
        if queue is None:
            queue = self._steering = _queue(self._steering_mode)
        return queue

    @property
    def follow_ups(self) -> agent.PendingMessageQueue:
        """The follow-up messages waiting for the run's end."""
        queue = self._follow_ups
        if queue is None:
            queue = self._follow_ups = _queue(self._follow_up_mode)
        return queue

    @property
    def ended(self) -> anyio.Event:
        """Set once the run ended (``close``); made on first use: most runs have no waiter."""
        event = self._ended
        if event is None:
            event = self._ended = anyio.Event()
            if self._is_ended:
                event.set()
        return event

    @property
    def signal(self) -> AbortSignal:
        """The run's abort signal (the request's signal, if any, fires it too)."""
        return self.controller.signal

    def offer(self, kind: LiveMessageKind, text: str) -> LiveMessageReason:
        """Queue ``text`` if ``decide_live_message`` allows it; the decision."""
        reason = decide_live_message(
            kind, active=not self._is_ended, compacting=self.compacting, stopped=self.stopped
        )
        if reason == "queued":
            self.enqueue(kind, text)
        return reason

    def enqueue(self, kind: LiveMessageKind, text: str) -> None:
        """Queue without asking (messages that already passed the decision elsewhere)."""
        queue = self.steering if kind == "steer" else self.follow_ups
        queue.enqueue(live_message(text))

    def abort(self, reason: Any = None) -> None:
        """Abort the run (OpenClaw's ``handle.abort()``); it ends as aborted."""
        self.controller.abort(reason)

    async def _pull_remote(self) -> None:
        if self.remote is None:
            return
        try:
            pulled = await self.remote()
        except Exception as exc:  # a broken store must not break the turn
            logger.warning("cannot read the live-message inbox of %s: %s", self.session_id, exc)
            return
        for kind, text in pulled:
            self.enqueue(kind, text)

    async def drain_steering(self) -> list[Any]:
        """The kernel's ``get_steering_messages``: the oldest steered message (or all)."""
        await self._pull_remote()
        queue = self._steering
        return self._delivered(queue.drain() if queue is not None else [])

    async def drain_follow_ups(self) -> list[Any]:
        """The kernel's ``get_follow_up_messages``, asked when the run would end: a steered
        message that arrived since the last turn boundary first, else a follow-up; when both
        are empty the run is ``stopped`` (until an attempt of the run starts again)."""
        await self._pull_remote()
        steering, follow_ups = self._steering, self._follow_ups
        messages = (steering.drain() if steering is not None else []) or (
            follow_ups.drain() if follow_ups is not None else []
        )
        if not messages:
            self.stopped = True
        return self._delivered(messages)

    def _delivered(self, messages: list[Any]) -> list[Any]:
        if messages:
            delivered = self.delivered
            if isinstance(delivered, list):
                delivered.extend(messages)
            else:
                self.delivered = list(messages)
        return messages

    def pending(self) -> int:
        """Messages queued and not yet handed to the kernel."""
        steering, follow_ups = self._steering, self._follow_ups
        return (0 if steering is None else len(steering)) + (
            0 if follow_ups is None else len(follow_ups)
        )

    def close(self) -> None:
        """The run ended: refuse from now on, wake the waiters."""
        if self._unlink is not None:
            self._unlink()
            self._unlink = None
        self.stopped = True
        self._is_ended = True
        if self._ended is not None:
            self._ended.set()


class LiveRunRegistry:
    """Active runs of one host by session id, with the session key → id map and waiters
    (OpenClaw's ``ACTIVE_EMBEDDED_RUNS``, ``setActiveEmbeddedRun``,
    ``clearActiveEmbeddedRun``, ``waitForEmbeddedPiRunEnd``)."""

    def __init__(self) -> None:
        self._runs: dict[str, LiveRunHandle] = {}
        self._keys: dict[str, str] = {}

    def set(self, handle: LiveRunHandle) -> None:
        """Register ``handle`` as the active run of its session (and key)."""
        self._runs[handle.session_id] = handle
        if handle.session_key:
            self._keys[handle.session_key] = handle.session_id

    def clear(self, handle: LiveRunHandle) -> bool:
        """Unregister ``handle`` if it is still the one registered (identity check) and wake
        its waiters; False when another handle took its place (that one stays)."""
        handle.close()
        if self._runs.get(handle.session_id) is not handle:
            return False
        del self._runs[handle.session_id]
        if handle.session_key and self._keys.get(handle.session_key) == handle.session_id:
            del self._keys[handle.session_key]
        return True

    def rekey(self, handle: LiveRunHandle, new_session_id: str) -> bool:
        """``handle``'s run moved to ``new_session_id`` (a compaction successor): register it
        there, drop the old id, point its session key at the new id. False (nothing changed)
        when ``handle`` is not the registered run, or another run holds the new id."""
        old = handle.session_id
        if self._runs.get(old) is not handle:
            return False
        if self._runs.get(new_session_id) not in (None, handle):
            return False
        del self._runs[old]
        handle.session_id = new_session_id
        self._runs[new_session_id] = handle
        if handle.session_key:
            self._keys[handle.session_key] = new_session_id
        return True

    def session_id_for(self, session_key: str) -> str | None:
        """The session id of the active run registered under ``session_key``."""
        return self._keys.get(session_key)

    def get(self, session_id: str | None) -> LiveRunHandle | None:
        """The active run of ``session_id``."""
        return self._runs.get(session_id) if session_id else None

    def active_session_ids(self) -> list[str]:
        """Sessions with an active run."""
        return list(self._runs)

    async def wait_for_end(self, session_id: str | None, timeout_s: float = 15.0) -> bool:
        """True once the run of ``session_id`` ended (at once when there is none); False
        after ``max(0.1, timeout_s)`` seconds (OpenClaw's floor of 100 ms)."""
        handle = self.get(session_id)
        if handle is None:
            return True
        with anyio.move_on_after(max(0.1, timeout_s)):
            await handle.ended.wait()
        return handle.ended.is_set()
