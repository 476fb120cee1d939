"""``openclaw-runtime run "prompt"``: one turn through ``Runtime.run``, streamed as it arrives.

The answer goes to stdout (pipe-friendly); the decision timeline (``--events``), spinner and
errors go to stderr. ``--json`` prints ``RunResult.to_dict()`` instead of streaming. Exit 0
when the run is ok, 1 when it failed, 2 when the invocation or configuration is wrong.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar, get_args

import anyio
import click

from .._runtime import Runtime
from ..config import RuntimeConfig
from ..events import Event
from ..llm import ThinkingLevel
from ..reply.usage import format_usage_line
from ..runner.request import RunResult
from ._common import (
    EXIT_FAILED,
    adhoc_model_config,
    command_errors,
    load_config,
    safe,
    safe_json,
)
from .memory_option import apply_memory_option, memory_option
from .progress import Status, next_status
from .style import StyledLines
from .timeline import AnswerWriter, StatusSpinner, describe_event, text_delta

__all__ = [
    "TurnPrinter",
    "max_tokens_option",
    "model_options",
    "report_turn_end",
    "request_options",
    "run",
    "session_options",
    "turn_usage_line",
]

F = TypeVar("F", bound=Callable[..., Any])
THINKING_LEVELS: tuple[str, ...] = get_args(ThinkingLevel)


def session_options(fn: F) -> F:
    """``--session`` and ``--session-key``."""
    fn = click.option(
        "--session-key",
        "session_key",
        default=None,
        help="Conversation key (e.g. telegram:4711); continues the session it points at.",
    )(fn)
    return click.option(
        "--session", "session_id", default=None, help="Session id to continue (or create)."
    )(fn)


def model_options(fn: F) -> F:
    """``--model``, ``--provider`` and ``--base-url`` (an ad-hoc OpenAI-compatible model)."""
    fn = click.option(
        "--base-url",
        default=None,
        help="An OpenAI-compatible endpoint (…/v1); defines an ad-hoc model with --model. "
        "The key comes from the provider's env var (OPENAI_API_KEY...) or its auth profiles.",
    )(fn)
    fn = click.option(
        "--provider", default=None, help="Provider of --model (default with --base-url: openai)."
    )(fn)
    return click.option(
        "--model", default=None, help="Model: provider/id, alias or id (default: [agent] model)."
    )(fn)


class Seconds(click.FloatRange):
    """A number of seconds, 0 or more: ``FloatRange(min=0)`` lets ``nan`` through (every
    comparison with it is false), which the run would refuse with a traceback."""

    def __init__(self) -> None:
        super().__init__(min=0)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if number != number:  # NaN
            self.fail(f"{value!r} is not a number of seconds.", param, ctx)
        return number


def max_tokens_option(fn: F) -> F:
    """``--max-tokens N``: the output cap of each model call."""
    return click.option(
        "--max-tokens",
        "max_tokens",
        type=click.IntRange(min=1),
        default=None,
        help="Most tokens one model call may generate "
        "(default: [agent] max_tokens, else the model's max_tokens).",
    )(fn)


def request_options(
    config: RuntimeConfig,
    *,
    model: str | None,
    provider: str | None,
    base_url: str | None,
    max_tokens: int | None = None,
) -> tuple[RuntimeConfig, dict[str, Any]]:
    """The config to run with and the model fields of the ``RunRequest``."""
    extra: dict[str, Any] = {} if max_tokens is None else {"max_tokens": max_tokens}
    if base_url:
        config, ref = adhoc_model_config(
            config,
            base_url=base_url,
            model=model,
            provider=provider,
            max_tokens=max_tokens or config.agent.max_tokens,
        )
        return config, {"model": ref, **extra}
    return config, {"model": model, "provider": provider, **extra}


class TurnPrinter:
    """The ``on_event`` of one CLI turn: answer deltas to stdout, the timeline (``events``)
    to stderr, a spinner while nothing visible happens."""

    def __init__(self, *, stream_answer: bool = True, events: bool = False, spinner: bool = True):
        self.stream_answer = stream_answer
        self.events = events
        self.answer = AnswerWriter(lambda: sys.stdout)
        self.spinner = StatusSpinner(enabled=None if spinner else False)
        self.status = Status()
        self.lines = StyledLines()

    def __call__(self, event: Event) -> None:
        delta = text_delta(event)
        if delta is not None:
            if self.stream_answer:
                self.status = next_status(self.status, "text_delta")
                self.spinner.hide()
                self.answer.write(delta)
            return
        self._track_progress(event)
        if self.events:
            line = describe_event(event)
            if line is not None:
                self._line(line)

    def _track_progress(self, event: Event) -> None:
        kind = event.type
        if kind == "attempt_start" and self.answer.written and not self.answer.at_line_start:
            self.answer.end_line()  # a retry after partial text starts on its own line
        status = next_status(self.status, kind, event)
        if status == self.status:
            return
        self.status = status
        if status.label is None:
            self.spinner.hide()
        else:
            self._show(status.label)

    def _same_terminal(self) -> bool:
        return sys.stdout.isatty() and sys.stderr.isatty()

    def _show(self, label: str) -> None:
        # the spinner redraws its own line: on a shared terminal, never the answer's
        if self.spinner.enabled and self._same_terminal():
            self.answer.end_line()
        self.spinner.show(label)

    def _line(self, line: str) -> None:
        if self._same_terminal():
            self.answer.end_line()  # never split an answer line
        label = self.spinner.hide_for_line()
        self.lines.echo(safe(line))
        if label is not None:
            self.spinner.show(label)

    def finish(self, result: RunResult) -> None:
        """End the streamed answer (or print the reply when nothing was streamed)."""
        self.spinner.hide()
        if self.stream_answer and not self.answer.written and result.ok and result.text:
            self.answer.write(result.text)
        if self.stream_answer:
            self.answer.end_line()


def turn_usage_line(result: RunResult) -> str | None:
    """The usage line after a turn: always after a successful one (tokens, and the cost when
    the model is priced); after a failed one only when its model calls spent tokens."""
    if not result.ok and not result.usage.total_tokens:
        return None
    return format_usage_line(result.usage)


def report_turn_end(result: RunResult, printer: TurnPrinter, *, cancelled: bool = False) -> None:
    """What ends a streamed turn on stderr: the usage line, then (failed) the error lines."""
    line = turn_usage_line(result)
    if line is not None:
        printer.lines.echo(line)
    if not result.ok and not cancelled:
        report_failure(result, printer.lines)


def report_failure(result: RunResult, lines: StyledLines | None = None) -> None:
    """The error payload and one ``error:`` line on stderr (secrets masked); a payload that
    only repeats the error's message is not printed twice."""
    out = lines if lines is not None else StyledLines()
    error = result.error
    for payload in result.payloads:
        if not (payload.is_error and payload.text):
            continue
        if error is not None and payload.text.removeprefix("⚠️ ").strip() == error.message:
            continue
        out.echo(safe(payload.text))
    if error is not None:
        reason = f", {error.reason}" if error.reason else ""
        out.echo(f"error: the run failed ({error.kind}{reason}): {safe(error.message)}")
    else:
        outcome = result.outcome
        message = outcome.error or "the run did not complete"
        out.echo(f"error: the run failed ({outcome.reason}): {safe(message)}")


async def run_turn(
    config: RuntimeConfig, prompt: str, options: dict[str, Any], printer: TurnPrinter
) -> RunResult:
    """One ``Runtime.run`` on a runtime that lives for this turn only."""
    async with Runtime(config) as runtime:
        result: RunResult = await runtime.run(prompt, on_event=printer, **options)
        return result


@click.command()
@click.argument("prompt")
@session_options
@model_options
@click.option(
    "--timeout",
    type=Seconds(),
    default=None,
    help="Seconds one attempt may take (0: no limit; default [agent] timeout_seconds).",
)
@click.option(
    "--thinking", type=click.Choice(THINKING_LEVELS), default=None, help="Thinking level."
)
@max_tokens_option
@click.option("--json", "as_json", is_flag=True, help="Print the RunResult as JSON, no streaming.")
@click.option("--events", is_flag=True, help="Print the decision timeline on stderr.")
@memory_option
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Tool summaries in the reply; -vv adds their results (default [agent.reply] verbose).",
)
@click.pass_context
@command_errors
def run(
    ctx: click.Context,
    prompt: str,
    session_id: str | None,
    session_key: str | None,
    model: str | None,
    provider: str | None,
    base_url: str | None,
    timeout: float | None,
    thinking: str | None,
    max_tokens: int | None,
    as_json: bool,
    events: bool,
    memory: bool,
    verbose: int,
) -> None:
    """Run one turn and stream the answer (PROMPT "-" reads it from stdin).

    \b
    openclaw-runtime run "Hello"
    openclaw-runtime run --session-key me --events "What did I just say?"
    OPENAI_API_KEY=... openclaw-runtime run --base-url https://api.openai.com/v1 \\
        --model gpt-4o-mini "Hello"
    """
    if prompt == "-":
        prompt = sys.stdin.read().rstrip("\n")
    if not prompt.strip():
        raise click.BadParameter("the prompt is empty", param_hint="'PROMPT'")
    config, options = request_options(
        apply_memory_option(load_config(ctx), memory),
        model=model,
        provider=provider,
        base_url=base_url,
        max_tokens=max_tokens,
    )
    options.update(
        session_id=session_id,
        session_key=session_key,
        timeout_s=timeout,
        thinking_level=thinking,
        verbose=(None, "on", "full")[min(verbose, 2)],
    )
    printer = TurnPrinter(stream_answer=not as_json, events=events, spinner=not as_json)
    result = anyio.run(run_turn, config, prompt, options, printer)
    if as_json:
        click.echo(safe_json(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        printer.finish(result)
        report_turn_end(result, printer)
    if not result.ok:
        sys.exit(EXIT_FAILED)
