"""``chat`` while an answer streams: typed lines steer it, Ctrl-C cancels it (issue 15 §1).

A chat that only reads its next line once the answer is complete cannot take "also check the
CI config" while the agent works, and Ctrl-C used to end the whole chat and lose the answer.
Here a turn runs beside two watchers:

* ``LineReader`` reads stdin in a daemon thread (so a blocked read never keeps the process
  alive), and while a turn runs each typed line is ``Runtime.steer``-ed into it; a line the
  run refuses (it was already finishing) and every ``/command`` wait for the turn to end and
  are handled next, in order;
* SIGINT during a turn calls ``Runtime.abort_run``: the answer stops, what had streamed is
  kept in the transcript as an aborted assistant message, and the chat goes on. Between
  turns Ctrl-C still leaves the chat.

Steering typed lines is the default on a terminal; ``--steer`` turns it on for piped input
(``--no-steer`` off), where lines that arrive during a turn would otherwise be prompts.
"""

from __future__ import annotations

import contextlib
import math
import signal
import sys
import threading
from collections import deque
from collections.abc import Callable
from typing import IO, Any

import anyio
import anyio.abc
import anyio.lowlevel
import click
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .._runtime import Runtime
from ..runner.request import RunResult

__all__ = ["LineReader", "run_live_turn"]


class LineReader:
    """Lines of ``stream`` as they are typed, read ahead in a daemon thread (``None``: end of
    input). Lines taken but not used can be ``push_back``-ed to be read again first."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream if stream is not None else sys.stdin
        self._send: MemoryObjectSendStream[str | None]
        self._receive: MemoryObjectReceiveStream[str | None]
        self._send, self._receive = anyio.create_memory_object_stream[str | None](math.inf)
        self._back: deque[str | None] = deque()
        self._started = False

    def _pump(self, token: Any) -> None:
        while True:
            try:
                line = self._stream.readline()
            except (OSError, ValueError):
                line = ""
            try:
                anyio.from_thread.run_sync(self._send.send_nowait, line or None, token=token)
            except Exception:  # the loop is gone: nobody listens any more
                return
            if not line:
                return

    def _start(self) -> None:
        if not self._started:
            self._started = True
            token = anyio.lowlevel.current_token()
            threading.Thread(
                target=self._pump, args=(token,), name="chat-stdin", daemon=True
            ).start()

    async def next(self) -> str | None:
        """The next line (without its newline), or None at end of input."""
        if self._back:
            return self._back.popleft()
        self._start()
        line = await self._receive.receive()
        return None if line is None else line.rstrip("\r\n")

    def push_back(self, line: str | None) -> None:
        """Read ``line`` again before anything new (order kept)."""
        self._back.append(line)


async def run_live_turn(
    runtime: Runtime,
    run: Callable[[], Any],
    *,
    session_id: str,
    lines: LineReader | None,
) -> tuple[RunResult, bool]:
    """Run one turn (``run()`` awaits ``runtime.run``) with the watchers of the module
    docstring; returns its result and whether Ctrl-C cancelled it."""
    cancelled = False
    result: RunResult | None = None

    async def on_sigint() -> None:
        nonlocal cancelled
        with contextlib.ExitStack() as stack:
            try:
                signals = stack.enter_context(anyio.open_signal_receiver(signal.SIGINT))
            except (NotImplementedError, RuntimeError, ValueError):
                return  # no signal handlers here (not the main thread, Windows): as before
            async for _ in signals:
                if await runtime.abort_run(session_id=session_id, reason="cancelled with Ctrl-C"):
                    cancelled = True
                    click.echo("\n⏹ answer cancelled", err=True)

    async def steer_lines(reader: LineReader) -> None:
        held: list[str | None] = []
        try:
            while True:
                line = await reader.next()
                text = (line or "").strip()
                if line is None or text.startswith("/") or held or not text:
                    if line is None or text:
                        held.append(line)  # after the turn, in order
                    continue
                with anyio.CancelScope(shield=True):  # a line is never lost half-way
                    answer = await runtime.steer(text, session_id=session_id)
                if answer.accepted:
                    click.echo("↳ steered into the answer", err=True)
                else:
                    held.append(line)  # the run was finishing: the next prompt
        finally:
            for line in held:
                reader.push_back(line)

    failed: Exception | None = None
    async with anyio.create_task_group() as tg:
        tg.start_soon(on_sigint)
        if lines is not None:
            tg.start_soon(steer_lines, lines)
        try:
            result = await run()
        except Exception as exc:  # raised as is (not in a group): the CLI reports it
            failed = exc
        tg.cancel_scope.cancel()
    if failed is not None:
        raise failed
    assert result is not None
    return result, cancelled
