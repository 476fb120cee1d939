"""``openclaw-runtime chat``: an interactive loop on one session, answers streamed.

Lines are prompts; ``/exit``, ``/new``, ``/compact``, ``/session`` and ``/help`` are commands.
It reads stdin line by line, so it works the same typed or piped (``printf 'hi\\n/exit\\n' |
openclaw-runtime chat``); the prompt marker is only shown on a terminal. On a terminal (or
with ``--steer``) a line typed while the answer streams is steered into it, and Ctrl-C
cancels the answer, not the chat (``chat_live``). One runtime serves the
whole conversation, so its lanes, HTTP connections and auth ledger are shared by every turn.

Each turn ends with its usage line on stderr. The exit code tells a script whether the chat
achieved anything (``chat_exit_code``): 1 when every turn failed, 0 when at least one
succeeded or none ran; turns cancelled with Ctrl-C count neither way.
"""

from __future__ import annotations

import sys
import uuid
from dataclasses import dataclass, field
from typing import Any

import anyio
import click

from .._runtime import Runtime
from ..config import RuntimeConfig
from ._common import EXIT_FAILED, command_errors, load_config
from .chat_live import LineReader, run_live_turn
from .memory_option import apply_memory_option, memory_option
from .run import (
    THINKING_LEVELS,
    Seconds,
    TurnPrinter,
    max_tokens_option,
    model_options,
    report_turn_end,
    request_options,
)
from .run import session_options as _session_options
from .sessions import describe_compaction

__all__ = ["chat", "chat_exit_code"]

HELP = """commands:
  /session   show the session id and where its transcript is written
  /new       start a fresh session
  /compact   summarize the session's older history now
  /exit      leave (so does end of input)"""


@dataclass
class _Chat:
    """The conversation's state between turns."""

    session_id: str | None
    session_key: str | None
    options: dict[str, Any] = field(default_factory=dict)
    events: bool = False
    steer: bool = False
    succeeded: int = 0
    failed: int = 0


def chat_exit_code(succeeded: int, failed: int) -> int:
    """1 when the chat ran turns and every one failed; 0 otherwise (one success is enough,
    and a chat of only commands, or of turns cancelled with Ctrl-C, failed at nothing)."""
    return EXIT_FAILED if failed > 0 and succeeded == 0 else 0


@click.command()
@_session_options
@model_options
@click.option("--timeout", type=Seconds(), default=None, help="Seconds one attempt may take.")
@click.option(
    "--thinking", type=click.Choice(THINKING_LEVELS), default=None, help="Thinking level."
)
@max_tokens_option
@click.option("--events", is_flag=True, help="Print the decision timeline on stderr.")
@memory_option
@click.option(
    "--steer/--no-steer",
    default=None,
    help="Steer lines typed during an answer into it (default: on a terminal).",
)
@click.pass_context
@command_errors
def chat(
    ctx: click.Context,
    session_id: str | None,
    session_key: str | None,
    model: str | None,
    provider: str | None,
    base_url: str | None,
    timeout: float | None,
    thinking: str | None,
    max_tokens: int | None,
    events: bool,
    memory: bool,
    steer: bool | None,
) -> None:
    """Chat on one session: type a message, get a streamed answer (/help for commands)."""
    config, options = request_options(
        apply_memory_option(load_config(ctx), memory),
        model=model,
        provider=provider,
        base_url=base_url,
        max_tokens=max_tokens,
    )
    options.update(timeout_s=timeout, thinking_level=thinking)
    live = sys.stdin.isatty() if steer is None else steer
    state = _Chat(session_id, session_key, options, events, live)
    anyio.run(_loop, config, state)
    code = chat_exit_code(state.succeeded, state.failed)
    if code:
        sys.exit(code)


async def _loop(config: RuntimeConfig, state: _Chat) -> None:
    interactive = sys.stdin.isatty()
    async with Runtime(config) as runtime:
        if state.session_id is None and state.session_key is not None:
            state.session_id = await runtime.session_index.lookup_id(state.session_key)
        if state.session_id is None:
            state.session_id = uuid.uuid4().hex
        if interactive:
            click.echo(f"session {state.session_id} · /help for commands, /exit to leave", err=True)
        lines = LineReader() if state.steer else None
        while True:
            if interactive:
                click.echo("› ", nl=False, err=True)
            if lines is not None:
                line = await lines.next()
            else:
                # a blocking read is fine: between turns nothing else runs on this loop
                line = sys.stdin.readline() or None
            if line is None:
                break
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                if not await _command(runtime, state, text):
                    break
                continue
            await _turn(runtime, state, text, lines)


async def _turn(runtime: Runtime, state: _Chat, prompt: str, lines: LineReader | None) -> None:
    printer = TurnPrinter(events=state.events)
    session_id = state.session_id
    assert session_id is not None

    async def run() -> Any:
        return await runtime.run(
            prompt,
            on_event=printer,
            session_id=session_id,
            session_key=state.session_key,
            **state.options,
        )

    result, cancelled = await run_live_turn(runtime, run, session_id=session_id, lines=lines)
    printer.finish(result)
    state.session_id = result.session_id
    report_turn_end(result, printer, cancelled=cancelled)
    if result.ok:
        state.succeeded += 1
    elif not cancelled:
        state.failed += 1


async def _command(runtime: Runtime, state: _Chat, text: str) -> bool:
    """Handle one slash command; False means leave the loop."""
    name = text.split()[0].lower()
    if name in ("/exit", "/quit"):
        return False
    session_id = state.session_id
    assert session_id is not None
    if name == "/help":
        click.echo(HELP)
    elif name == "/new":
        state.session_id = uuid.uuid4().hex
        click.echo(f"new session {state.session_id}")
    elif name == "/session":
        store = runtime.session_store
        key = state.session_key or await runtime.session_index.lookup_key(session_id)
        click.echo(f"session {session_id}" + (f" (key {key})" if key else ""))
        locate = getattr(store, "path_for", None)  # file stores say where; others by name
        where = (
            locate(session_id)
            if locate is not None
            else runtime.config.backends.selected("session_store")
        )
        written = "" if await store.exists(session_id) else " (not written yet)"
        click.echo(f"transcript: {where}{written}")
    elif name == "/compact":
        if not await runtime.session_store.exists(session_id):
            click.echo("nothing to compact yet: the session has no transcript")
        else:
            result = await runtime.compact_session(session_id, session_key=state.session_key)
            click.echo(describe_compaction(result)[0])
    else:
        click.echo(f"unknown command {name} (try /help)", err=True)
    return True
