"""Run events as a human timeline: one line per decision, and the live pieces of a terminal UI.

``describe_event`` turns the orchestrator's events (attempts, rotations, compactions,
fallbacks, tool calls) into one line each — what ``run --events`` prints on stderr and what
``demo`` prints inline — so people see *why* a run took the path it took. Agent-level events
that carry no decision (message starts, deltas, lane bookkeeping without a wait) give None.

``AnswerWriter`` streams answer text and keeps track of the cursor so a timeline line never
lands in the middle of an answer; the spinner is the stderr status shown while waiting for the
first token or a compaction (``StatusSpinner``: a no-op when stderr is not a terminal).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from ..events import Event
from ..failover.events import redact_secret_text
from ..providers.network_errors import is_network_error_message
from .terminal import surely_not_a_terminal

if TYPE_CHECKING:
    from rich.console import Console
    from rich.live import Live
    from rich.spinner import Spinner as RichSpinner

__all__ = [
    "AnswerWriter",
    "StatusSpinner",
    "abbreviate",
    "describe_event",
    "format_tool_call",
    "text_delta",
]

#: Lane waits shorter than this are bookkeeping, not news.
NOTABLE_WAIT_MS = 100.0


def abbreviate(text: str, limit: int = 120) -> str:
    """One line of at most ``limit`` characters (newlines folded, an ellipsis when cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def format_tool_call(name: str, args: Any, limit: int = 100) -> str:
    """``name(key="value", n=1)`` with the arguments abbreviated."""
    if isinstance(args, dict):
        inner = ", ".join(
            f"{key}={json.dumps(value, ensure_ascii=False, default=str)}"
            for key, value in args.items()
        )
    else:
        inner = json.dumps(args, ensure_ascii=False, default=str) if args is not None else ""
    return f"{name}({abbreviate(inner, limit)})"


def _tokens(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _error(text: str | None, limit: int = 140) -> str:
    return abbreviate(redact_secret_text(text or "unknown error"), limit)


def _result_text(result: Any) -> str:
    text = getattr(result, "text", None)
    if callable(text):
        return str(text())
    return json.dumps(result, ensure_ascii=False, default=str)


def describe_event(event: Event) -> str | None:
    """One timeline line for ``event``, or None when it is not a decision worth a line."""
    handler = _HANDLERS.get(event.type)
    return handler(event) if handler is not None else None


def _run_start(e: Any) -> str:
    key = f" (key {e.session_key})" if e.session_key else ""
    return f"▸ run {e.run_id[:8]} · session {e.session_id}{key} · {e.provider}/{e.model}"


def _lane_wait(e: Any) -> str | None:
    return f"· queued on lane {e.lane}" if e.kind == "session" else None


def _lane_acquired(e: Any) -> str | None:
    if e.waited_ms < NOTABLE_WAIT_MS:
        return None
    return f"· lane {e.lane} free after {e.waited_ms / 1000:.1f} s"


def _attempt_start(e: Any) -> str:
    profile = f" with profile {e.auth_profile_id}" if e.auth_profile_id else ""
    notes = []
    if e.mode == "continue":
        notes.append("continuing the turn")
    if e.additions:
        notes.append("+ " + ", ".join(e.additions))
    suffix = f" ({'; '.join(notes)})" if notes else ""
    return f"· attempt {e.attempt}: {e.provider}/{e.model}{profile}{suffix}"


def _attempt_end(e: Any) -> str | None:
    if e.timed_out:
        kind = "went idle" if e.idle_timed_out else "timed out"
        during = (
            " while a tool ran"
            if not e.idle_timed_out and getattr(e, "timeout_phase", None) == "tool_execution"
            else ""
        )
        return f"✗ attempt {e.attempt} {kind} after {e.duration_ms / 1000:.1f} s{during}"
    if e.stop_reason != "error" and e.error is None:
        return None
    error = _error(e.error)
    status = f"{e.status} " if e.status and not error.startswith(str(e.status)) else ""
    label = "network" if is_network_error_message(e.error) else e.failover_reason
    reason = f" ({label})" if label else ""
    return f"✗ attempt {e.attempt} failed{reason}: {status}{error}"


_DECISION_MARKS = {
    "compact": "⇣",
    "truncate": "✂",
    "retry": "↻",
    "adjust_window": "!",
    "downgrade_thinking": "↻",
}
# rotations, fallbacks and completion have their own, more precise events
_SILENT_DECISIONS = frozenset({"rotate_profile", "fallback_model", "done", "continue_normal"})


def _attempt_decision(e: Any) -> str | None:
    if e.action in _SILENT_DECISIONS:
        return None
    mark = _DECISION_MARKS.get(e.action, "→")
    return f"{mark} {e.explanation}"


def _profile_rotated(e: Any) -> str:
    source = e.from_profile or "no profile"
    ledger = (
        f"{source} marked {e.recorded_reason} on the ledger"
        if e.recorded_reason
        else "not recorded on the ledger"
    )
    return f"↻ rotated auth profile {source} → {e.to_profile} ({e.reason or 'failure'}; {ledger})"


def _retry_scheduled(e: Any) -> str:
    wait = f" in {e.delay_ms / 1000:.2f} s" if e.delay_ms else ""
    kind = e.kind.replace("_", " ")
    return f"↻ retrying the same model ({kind}, {e.count}/{e.limit}){wait}"


def _compaction_start(e: Any) -> str | None:
    if e.trigger in ("overflow", "timeout"):
        return None  # the decision that triggered it already has a line
    return f"⇣ compacting the session ({e.trigger}, ~{_tokens(e.tokens_before)} tokens)"


def _compaction_end(e: Any) -> str:
    if e.compacted:
        return f"⇣ compacted {_tokens(e.tokens_before)} → {_tokens(e.tokens_after)} tokens"
    if not e.ok:
        return f"✗ compaction failed: {_error(e.reason)}"
    return f"· nothing compacted: {_error(e.reason or 'nothing to summarize')}"


def _truncated(e: Any) -> str:
    if e.truncated:
        return f"✂ truncated {e.truncated} oversized tool result(s)"
    return f"· no tool result to truncate{f': {e.reason}' if e.reason else ''}"


def _window_warning(e: Any) -> str:
    return f"! small context window for {e.provider}/{e.model}: {e.tokens:,} tokens ({e.source})"


def _forward_compat(e: Any) -> str:
    return f"! {e.provider}/{e.model} is not in the catalog: using {e.template}'s definition"


def _fallback_attempt(e: Any) -> str | None:
    if e.attempt <= 1:
        return None
    return f"⇢ trying fallback model {e.provider}/{e.model} ({e.attempt}/{e.total})"


def _fallback_decision(e: Any) -> str:
    target = (
        f" → falling back to {e.next_provider}/{e.next_model}"
        if e.next_model and e.action == "fallback_model"
        else "; no fallback left"
        if e.next_model is None
        else f" → {e.explanation}"
    )
    return f"⇢ {e.provider}/{e.model} gave up ({e.reason or 'error'}){target}"


def _fallback_skipped(e: Any) -> str:
    return f"⇢ skipped {e.provider}/{e.model}: {e.explanation}"


def _fallback_exhausted(e: Any) -> str:
    return f"✗ every model failed ({e.failures}): {_error(e.explanation)}"


def _tool_start(e: Any) -> str:
    return f"⚙ tool call {format_tool_call(e.tool_name, e.args)}"


def _tool_end(e: Any) -> str:
    text = abbreviate(redact_secret_text(_result_text(e.result)), 100)
    if e.is_error:
        return f"⚙ {e.tool_name} failed: {text}"
    return f"⚙ {e.tool_name} → {text}"


def _run_end(e: Any) -> str:
    outcome = e.outcome or {}
    attempts = f"{e.attempts} attempt{'s' if e.attempts != 1 else ''}"
    if outcome.get("status") == "ok" and e.error is None:
        model = f" on {e.provider}/{e.model}" if e.model else ""
        return f"✓ done after {attempts}{model}"
    error = e.error or {}
    kind = error.get("kind") or outcome.get("reason") or "error"
    message = error.get("message") or outcome.get("error") or "the run failed"
    return f"✗ run failed after {attempts} ({kind}): {_error(message)}"


def _plugin_fault(e: Any) -> str:
    where = e.hook if e.unit == e.hook else f"{e.hook}, {e.unit}"
    return f"! plugin {e.plugin} failed in {where} (skipped): {_error(e.error)}"


def _plugin_quarantined(e: Any) -> str:
    return (
        f"! plugin {e.plugin} quarantined ({e.unit}): not called again until its cool-off ends"
        " (openclaw-runtime plugins; --clear-faults)"
    )


_HANDLERS: dict[str, Callable[[Any], str | None]] = {
    "run_start": _run_start,
    "plugin_fault": _plugin_fault,
    "plugin_quarantined": _plugin_quarantined,
    "lane_wait": _lane_wait,
    "lane_acquired": _lane_acquired,
    "attempt_start": _attempt_start,
    "attempt_end": _attempt_end,
    "attempt_decision": _attempt_decision,
    "profile_rotated": _profile_rotated,
    "retry_scheduled": _retry_scheduled,
    "compaction_start": _compaction_start,
    "compaction_end": _compaction_end,
    "tool_results_truncated": _truncated,
    "context_window_warning": _window_warning,
    "model_forward_compat": _forward_compat,
    "fallback_attempt_start": _fallback_attempt,
    "fallback_decision": _fallback_decision,
    "fallback_candidate_skipped": _fallback_skipped,
    "fallback_exhausted": _fallback_exhausted,
    "tool_execution_start": _tool_start,
    "tool_execution_end": _tool_end,
    "run_end": _run_end,
}


def text_delta(event: Event) -> str | None:
    """The answer text an event adds (a ``message_update`` carrying a text delta), if any."""
    if event.type != "message_update":
        return None
    inner = getattr(event, "assistant_message_event", None)
    if getattr(inner, "type", None) != "text_delta":
        return None
    delta = getattr(inner, "delta", "")
    return delta if isinstance(delta, str) else None


class AnswerWriter:
    """Streams answer text to ``stream`` and remembers whether the cursor is mid-line."""

    def __init__(self, stream: Callable[[], IO[str]]) -> None:
        self._stream = stream
        self.at_line_start = True
        self.written = 0

    def write(self, text: str) -> None:
        """Append ``text`` now (flushed: this is what makes streaming visible)."""
        if not text:
            return
        out = self._stream()
        out.write(text)
        out.flush()
        self.written += len(text)
        self.at_line_start = text.endswith("\n")

    def end_line(self) -> None:
        """Finish the current line, if one is open."""
        if not self.at_line_start:
            self.write("\n")


class StatusSpinner:
    """A transient rich spinner on stderr; every method is a no-op unless stderr is a TTY.

    rich is imported only when stderr may be a terminal (``terminal.surely_not_a_terminal``).
    """

    def __init__(self, enabled: bool | None = None) -> None:
        self._console: Console | None = None
        if enabled is None:
            enabled = (
                False
                if surely_not_a_terminal(_stderr_is_tty(), os.environ)
                else self.console.is_terminal
            )
        self.enabled = enabled
        self._live: Live | None = None
        self._label: str | None = None

    @property
    def console(self) -> Console:
        """The rich console on stderr (built, and rich imported, on first use)."""
        if self._console is None:
            from rich.console import Console  # lazy: start-up time

            self._console = Console(stderr=True, highlight=False)
        return self._console

    def show(self, text: str) -> None:
        """Show (or relabel) the spinner."""
        if not self.enabled:
            return
        self._label = text
        renderable = _rich_spinner(text)
        if self._live is None:
            from rich.live import Live  # lazy: start-up time

            self._live = Live(
                renderable,
                console=self.console,
                transient=True,
                refresh_per_second=12,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        else:
            self._live.update(renderable)

    def hide(self) -> None:
        """Remove the spinner (before anything else is written)."""
        if self._live is not None:
            self._live.stop()
            self._live = None
        self._label = None

    def hide_for_line(self) -> str | None:
        """Hide the spinner so a line can be printed; returns its label to ``show`` again."""
        label = self._label if self._live is not None else None
        self.hide()
        return label


def _rich_spinner(text: str) -> RichSpinner:
    from rich.spinner import Spinner as RichSpinner  # lazy: start-up time

    return RichSpinner("dots", text=text, style="cyan")


def _stderr_is_tty() -> bool:
    """``sys.stderr.isatty()`` as rich reads it (missing or closed: not a TTY)."""
    isatty = getattr(sys.stderr, "isatty", None)
    try:
        return False if isatty is None else bool(isatty())
    except ValueError:
        return False
