"""Cron's fatal failure signal, and the tool-error facts it (and payload building) read.

Unattended cron runs must not treat "the shell was denied by the sandbox" as a normal silent
completion: ``resolve_embedded_run_failure_signal`` upgrades an exec-like tool's
``SYSTEM_RUN_DENIED`` / ``INVALID_REQUEST`` error into a ``fatal_for_cron`` signal, and so
does a run that exhausted repeated calls to an unavailable tool. Only trigger ``"cron"``
gets a signal; every other trigger gets ``None``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

__all__ = [
    "EXEC_LIKE_TOOL_NAMES",
    "EXHAUSTED_UNAVAILABLE_TOOL_MESSAGE",
    "FAILURE_SIGNAL_CODES",
    "EmbeddedRunFailureSignal",
    "ToolErrorSummary",
    "is_exec_like_tool_name",
    "resolve_embedded_run_failure_signal",
]

#: Shell-execution tools: they share retry, mutation and cron-failure semantics.
EXEC_LIKE_TOOL_NAMES: Final = frozenset({"exec", "bash"})
#: Tool error codes that make an exec-like failure fatal for cron.
FAILURE_SIGNAL_CODES: Final = ("SYSTEM_RUN_DENIED", "INVALID_REQUEST")
EXHAUSTED_UNAVAILABLE_TOOL_MESSAGE: Final = (
    "The agent run exhausted repeated calls to an unavailable tool. "
    "Delivery suppressed to prevent internal self-debug text from reaching the chat channel."
)


def is_exec_like_tool_name(tool_name: str | None) -> bool:
    """``exec`` or ``bash``, case- and whitespace-insensitive."""
    return bool(tool_name) and (tool_name or "").strip().lower() in EXEC_LIKE_TOOL_NAMES


def _opt_str(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    trimmed = value.strip()
    return trimmed or None


@dataclass(frozen=True, slots=True)
class ToolErrorSummary:
    """The last failed tool call of an attempt (OpenClaw's ``ToolErrorSummary``).

    ``mutating_action`` None means "unknown": callers fall back to the tool name
    (``is_likely_mutating_tool_name``). ``middleware_error`` marks non-terminal bookkeeping
    errors whose warning may be shown as a fallback only.
    """

    tool_name: str
    meta: str | None = None
    error: str | None = None
    error_code: str | None = None
    timed_out: bool = False
    middleware_error: bool = False
    mutating_action: bool | None = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> ToolErrorSummary:
        """From OpenClaw's camelCase keys (``toolName``, ``errorCode``...) or snake_case."""

        def pick(*names: str) -> Any:
            for name in names:
                if name in data:
                    return data[name]
            return None

        tool_name = pick("toolName", "tool_name")
        if not isinstance(tool_name, str):
            raise ValueError(f"a tool error summary needs a string toolName, got {tool_name!r}")
        mutating = pick("mutatingAction", "mutating_action")
        return cls(
            tool_name=tool_name,
            meta=pick("meta") if isinstance(pick("meta"), str) else None,
            error=pick("error") if isinstance(pick("error"), str) else None,
            error_code=pick("errorCode", "error_code")
            if isinstance(pick("errorCode", "error_code"), str)
            else None,
            timed_out=pick("timedOut", "timed_out") is True,
            middleware_error=pick("middlewareError", "middleware_error") is True,
            mutating_action=mutating if isinstance(mutating, bool) else None,
        )


@dataclass(frozen=True, slots=True)
class EmbeddedRunFailureSignal:
    """A failure the scheduler must see (OpenClaw's ``EmbeddedRunFailureSignal``)."""

    kind: Literal["execution_denied", "exhausted_unavailable_tool"]
    message: str
    source: Literal["tool"] = "tool"
    code: str | None = None
    tool_name: str | None = None
    fatal_for_cron: bool = True

    def to_dict(self) -> dict[str, Any]:
        """OpenClaw's wire shape (camelCase, optional keys omitted)."""
        out: dict[str, Any] = {"kind": self.kind, "source": self.source}
        if self.tool_name:
            out["toolName"] = self.tool_name
        if self.code:
            out["code"] = self.code
        out["message"] = self.message
        out["fatalForCron"] = self.fatal_for_cron
        return out


def resolve_embedded_run_failure_signal(
    trigger: str | None,
    last_tool_error: ToolErrorSummary | Mapping[str, Any] | None = None,
    *,
    exhausted_unknown_tool: bool = False,
) -> EmbeddedRunFailureSignal | None:
    """The fatal cron signal for this run, or None.

    Only ``trigger == "cron"`` qualifies. An exhausted unavailable tool wins; otherwise the
    last tool error must come from an exec-like tool and carry exactly ``SYSTEM_RUN_DENIED``
    or ``INVALID_REQUEST`` (after trimming). The message is the tool's error text, else the
    code.
    """
    if trigger != "cron":
        return None
    if exhausted_unknown_tool:
        return EmbeddedRunFailureSignal(
            kind="exhausted_unavailable_tool", message=EXHAUSTED_UNAVAILABLE_TOOL_MESSAGE
        )
    if last_tool_error is None:
        return None
    summary = (
        last_tool_error
        if isinstance(last_tool_error, ToolErrorSummary)
        else ToolErrorSummary.from_mapping(last_tool_error)
    )
    if not is_exec_like_tool_name(summary.tool_name):
        return None
    code = _opt_str(summary.error_code)
    if code not in FAILURE_SIGNAL_CODES:
        return None
    return EmbeddedRunFailureSignal(
        kind="execution_denied",
        code=code,
        tool_name=summary.tool_name or None,
        message=_opt_str(summary.error) or code,
    )
