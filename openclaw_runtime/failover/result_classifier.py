"""Runs that finished but amount to nothing (spec §11.4): should another model try?

``classify_embedded_agent_run_result_for_model_fallback`` flags only failed *invisible*
outcomes (no reply, reasoning only, a plan without an answer, a fallback-safe incomplete turn,
an auth/billing error payload) and the generic external-runner failure copy. Delivered
messages, deliberate silent replies, hook blocks and aborts never trigger another model: a
retry would repeat side effects or bypass a policy decision.

``merge_embedded_agent_run_result_for_model_fallback_exhaustion`` builds what the user sees
when every model failed: the newest attempt's bookkeeping, the most credible payload (the
preserved result with the highest priority: a terminal presentation beats a bare incomplete
turn), and an execution trace without a winner.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from .._json import untrusted_json_object
from .classify import classify_failover_reason
from .reasons import FailoverReason

__all__ = [
    "CODEX_INCOMPLETE_RESULT_TEXT",
    "CODEX_INCOMPLETE_SIDE_EFFECT_TEXT",
    "GENERIC_EXTERNAL_RUN_FAILURE_TEXT",
    "SILENT_REPLY_TOKEN",
    "EmbeddedRunResult",
    "ExecutionTrace",
    "HarnessResultClassification",
    "ResultFallbackClassification",
    "RunPayload",
    "TraceAttempt",
    "classify_embedded_agent_run_result_for_model_fallback",
    "has_visible_agent_payload",
    "is_generic_external_run_failure_text",
    "is_gpt5_model_id",
    "is_silent_reply_payload_text",
    "merge_embedded_agent_run_result_for_model_fallback_exhaustion",
]

GENERIC_EXTERNAL_RUN_FAILURE_TEXT = (
    "⚠️ Something went wrong while processing your request. Please try again, or use /new to "
    "start a fresh session."
)
SILENT_REPLY_TOKEN = "NO_REPLY"
#: Openings of the Codex app-server's incomplete-turn error payloads.
CODEX_INCOMPLETE_SIDE_EFFECT_TEXT = "OpenClaw detected an incomplete Codex turn after tool activity"
CODEX_INCOMPLETE_RESULT_TEXT = (
    "OpenClaw detected an incomplete Codex turn before a final answer was available"
)

HarnessResultClassification: TypeAlias = Literal["empty", "reasoning-only", "planning-only"]
_GPT5_MODEL_ID_RE = re.compile(r"(?:^|[/:])gpt-5(?:[.-]|$)")


@dataclass(frozen=True, slots=True)
class RunPayload:
    """One reply payload of a run: text, media, or a rich presentation."""

    text: str | None = None
    is_error: bool = False
    is_reasoning: bool = False
    media_urls: tuple[str, ...] = ()
    rich_content: bool = False

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> RunPayload:
        """From OpenClaw's payload keys (``text``, ``isError``, ``isReasoning``, ``mediaUrl(s)``,
        ``presentation``/``interactive``/``channelData``)."""
        urls = [data.get("mediaUrl"), *(data.get("mediaUrls") or [])]
        return cls(
            text=data["text"] if isinstance(data.get("text"), str) else None,
            is_error=data.get("isError", data.get("is_error")) is True,
            is_reasoning=data.get("isReasoning", data.get("is_reasoning")) is True,
            media_urls=tuple(url for url in urls if isinstance(url, str)),
            rich_content=any(
                bool(data.get(key)) for key in ("presentation", "interactive", "channelData")
            ),
        )

    def is_visible(self) -> bool:
        """Non-empty text or media, or a rich presentation."""
        return bool(
            (self.text and self.text.strip())
            or any(url.strip() for url in self.media_urls)
            or self.rich_content
        )


@dataclass(frozen=True, slots=True)
class TraceAttempt:
    """One candidate in an execution trace."""

    provider: str
    model: str
    result: str


@dataclass(frozen=True, slots=True)
class ExecutionTrace:
    """Which candidates ran, and which one won."""

    winner_provider: str | None = None
    winner_model: str | None = None
    attempts: tuple[TraceAttempt, ...] | None = None


@dataclass(frozen=True, slots=True)
class EmbeddedRunResult:
    """What the classifier needs to know about a finished run.

    ``error_kind`` is ``meta.error.kind`` (``incomplete_turn``, ``hook_block``...);
    ``delivery_committed`` is the orchestrator's "outbound delivery was committed" evidence;
    ``error`` is the opaque ``meta.error`` carried through an exhaustion merge.
    """

    payloads: tuple[RunPayload, ...] = ()
    aborted: bool = False
    delivery_committed: bool = False
    error_kind: str | None = None
    error_fallback_safe: bool = False
    error_terminal_presentation: bool = False
    replay_invalid: bool = False
    harness_classification: HarnessResultClassification | None = None
    final_assistant_raw_text: str | None = None
    final_assistant_visible_text: str | None = None
    silent: bool = False
    tool_calls: int = 0
    accepted_session_spawns: int = 0
    execution_trace: ExecutionTrace | None = None
    error: Any = None

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> EmbeddedRunResult | None:
        """From OpenClaw's ``EmbeddedAgentRunResult`` shape; None when ``meta`` is missing."""
        meta = data.get("meta")
        if not isinstance(meta, Mapping):
            return None
        error = meta.get("error") if isinstance(meta.get("error"), Mapping) else None
        trace = meta.get("executionTrace")
        summary = meta.get("toolSummary")
        spawns = data.get("acceptedSessionSpawns")
        return cls(
            payloads=tuple(
                RunPayload.from_mapping(p)
                for p in data.get("payloads") or ()
                if isinstance(p, Mapping)
            ),
            aborted=bool(meta.get("aborted")),
            delivery_committed=bool(data.get("deliveryCommitted") or meta.get("deliveryCommitted")),
            error_kind=error.get("kind") if error else None,
            error_fallback_safe=bool(error and error.get("fallbackSafe") is True),
            error_terminal_presentation=bool(error and error.get("terminalPresentation") is True),
            replay_invalid=meta.get("replayInvalid") is True,
            harness_classification=meta.get("agentHarnessResultClassification"),
            final_assistant_raw_text=_str_or_none(meta.get("finalAssistantRawText")),
            final_assistant_visible_text=_str_or_none(meta.get("finalAssistantVisibleText")),
            tool_calls=_int(summary.get("calls")) if isinstance(summary, Mapping) else 0,
            accepted_session_spawns=len(spawns) if isinstance(spawns, list) else 0,
            execution_trace=_trace_from_mapping(trace) if isinstance(trace, Mapping) else None,
            error=error,
        )


def _str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _trace_from_mapping(data: Mapping[str, Any]) -> ExecutionTrace:
    attempts = data.get("attempts")
    return ExecutionTrace(
        winner_provider=_str_or_none(data.get("winnerProvider")),
        winner_model=_str_or_none(data.get("winnerModel")),
        attempts=tuple(
            TraceAttempt(str(a.get("provider", "")), str(a.get("model", "")), str(a.get("result")))
            for a in attempts
            if isinstance(a, Mapping)
        )
        if isinstance(attempts, list)
        else None,
    )


@dataclass(frozen=True, slots=True)
class ResultFallbackClassification:
    """Why a finished run should count as a failure for model fallback."""

    message: str
    reason: FailoverReason
    code: str
    raw_error: str | None = None
    preserve_result_on_exhaustion: bool = False
    preserve_result_priority: int = 0

    def to_dict(self) -> dict[str, Any]:
        """OpenClaw's ``ModelFallbackResultClassification`` keys."""
        out: dict[str, Any] = {
            "message": self.message,
            "reason": str(self.reason),
            "code": self.code,
        }
        if self.raw_error is not None:
            out["rawError"] = self.raw_error
        if self.preserve_result_on_exhaustion:
            out["preserveResultOnExhaustion"] = True
            out["preserveResultPriority"] = self.preserve_result_priority
        return out


# --------------------------------------------------------------------------- small predicates


def is_generic_external_run_failure_text(text: str | None) -> bool:
    """Exactly the generic external-runner failure copy."""
    return text is not None and text.strip() == GENERIC_EXTERNAL_RUN_FAILURE_TEXT


def is_silent_reply_payload_text(text: str | None, token: str = SILENT_REPLY_TOKEN) -> bool:
    """The agent's deliberate "no reply": the bare token or ``{"action": "<token>"}``."""
    if not text:
        return False
    trimmed = text.strip()
    if trimmed == token:
        return True
    if not (trimmed.startswith("{") and trimmed.endswith("}") and token in trimmed):
        return False
    parsed = untrusted_json_object(trimmed)
    return (
        isinstance(parsed, dict)
        and list(parsed) == ["action"]
        and isinstance(parsed["action"], str)
        and parsed["action"].strip() == token
    )


def is_gpt5_model_id(model_id: str | None) -> bool:
    """``gpt-5`` at the start or after ``/`` or ``:``, then ``.``, ``-`` or the end."""
    normalized = model_id.strip().lower() if model_id else ""
    return bool(normalized) and _GPT5_MODEL_ID_RE.search(normalized) is not None


def has_visible_agent_payload(
    payloads: Sequence[RunPayload], *, include_errors: bool = True, include_reasoning: bool = True
) -> bool:
    """Does any payload show the user something?"""
    return any(
        payload.is_visible()
        and (include_errors or not payload.is_error)
        and (include_reasoning or not payload.is_reasoning)
        for payload in payloads
    )


def _has_deliberate_silent_reply(result: EmbeddedRunResult) -> bool:
    if result.error_kind == "hook_block" or result.silent:
        return True
    return any(
        is_silent_reply_payload_text(text)
        for text in (result.final_assistant_raw_text, result.final_assistant_visible_text)
    )


# --------------------------------------------------------------------------- the classifier

ReasonClassifier: TypeAlias = Callable[[str, str], "FailoverReason | None"]


def _default_reason_classifier(text: str, provider: str) -> FailoverReason | None:
    return classify_failover_reason(text, provider=provider)


def _coerce_result(result: object) -> EmbeddedRunResult | None:
    if isinstance(result, EmbeddedRunResult):
        return result
    if isinstance(result, Mapping):
        return EmbeddedRunResult.from_mapping(result)
    return None


def _codex_incomplete(
    result: EmbeddedRunResult,
) -> ResultFallbackClassification | Literal[False] | None:
    """Codex app-server incomplete turns (decided before the abort check; False: not Codex)."""
    for payload in result.payloads:
        text = (payload.text or "").strip()
        if not payload.is_error or not text:
            continue
        if text.startswith(CODEX_INCOMPLETE_SIDE_EFFECT_TEXT):
            return ResultFallbackClassification(
                text, FailoverReason.FORMAT, "codex_app_server_incomplete_side_effect", text
            )
        if text.startswith(CODEX_INCOMPLETE_RESULT_TEXT):
            if result.tool_calls > 0:
                return None
            return ResultFallbackClassification(
                text, FailoverReason.FORMAT, "codex_app_server_incomplete_result", text
            )
    return False


def classify_embedded_agent_run_result_for_model_fallback(
    provider: str,
    model: str,
    result: EmbeddedRunResult | Mapping[str, Any] | None,
    *,
    has_directly_sent_block_reply: bool = False,
    has_block_reply_pipeline_output: bool = False,
    classify_reason: ReasonClassifier = _default_reason_classifier,
) -> ResultFallbackClassification | None:
    """A fallback classification when a run failed without user-visible output, else None.

    ``classify_reason(error_text, provider)`` classifies error payloads (inject the runtime's
    plugin chain to honour provider dialects).
    """
    run = _coerce_result(result)
    if run is None:
        return None
    label = f"{provider}/{model}"
    if has_directly_sent_block_reply or has_block_reply_pipeline_output:
        return None
    if run.accepted_session_spawns > 0 or run.delivery_committed:
        return None
    codex = _codex_incomplete(run)
    if codex is not False:
        return codex
    if run.aborted:
        return None
    incomplete_turn = run.error_kind == "incomplete_turn"
    if incomplete_turn and not run.error_fallback_safe:
        return None
    if run.replay_invalid and not incomplete_turn:
        return None
    if run.error_kind == "hook_block":
        return None
    payloads = run.payloads
    if len(payloads) == 1:
        only = payloads[0]
        if (
            not only.is_error
            and not only.is_reasoning
            and is_generic_external_run_failure_text(only.text)
        ):
            return ResultFallbackClassification(
                f"{label} ended with a generic external runner failure: {only.text}",
                FailoverReason.FORMAT,
                "generic_external_run_failure",
                only.text,
            )
    if has_visible_agent_payload(payloads, include_errors=False, include_reasoning=False):
        return None
    if incomplete_turn:
        terminal_text = next((p.text for p in payloads if p.is_error and p.text is not None), None)
        return ResultFallbackClassification(
            terminal_text or f"{label} ended with an incomplete terminal response",
            FailoverReason.FORMAT,
            "incomplete_result",
            preserve_result_on_exhaustion=True,
            preserve_result_priority=1 if run.error_terminal_presentation else 0,
        )
    harness = _HARNESS_RESULTS.get(run.harness_classification or "")
    if harness is not None:
        code, suffix = harness
        return ResultFallbackClassification(f"{label} {suffix}", FailoverReason.FORMAT, code)
    error_text = "\n".join(p.text or "" for p in payloads if p.is_error)
    if error_text.strip():
        found = classify_reason(error_text, provider)
        if found in _BUSINESS_DENIALS:
            assert found is not None
            return ResultFallbackClassification(
                f"{label} ended with a provider error: {error_text}",
                found,
                "embedded_error_payload",
                error_text,
            )
    if not is_gpt5_model_id(model):
        return None
    if not payloads:
        if _has_deliberate_silent_reply(run):
            return None
        return ResultFallbackClassification(
            f"{label} ended without a visible assistant reply",
            FailoverReason.FORMAT,
            "empty_result",
        )
    if all(p.is_reasoning for p in payloads):
        return ResultFallbackClassification(
            f"{label} ended with reasoning only", FailoverReason.FORMAT, "reasoning_only_result"
        )
    return None


_HARNESS_RESULTS: dict[str, tuple[str, str]] = {
    "empty": ("empty_result", "ended without a visible assistant reply"),
    "reasoning-only": ("reasoning_only_result", "ended with reasoning only"),
    "planning-only": ("planning_only_result", "ended with a structured plan but no final answer"),
}
_BUSINESS_DENIALS = frozenset(
    {FailoverReason.AUTH, FailoverReason.AUTH_PERMANENT, FailoverReason.BILLING}
)


# --------------------------------------------------------------------------- exhaustion merge

RunResultLike: TypeAlias = "EmbeddedRunResult | Mapping[str, Any]"


def merge_embedded_agent_run_result_for_model_fallback_exhaustion(
    latest_result: RunResultLike, preferred_result: RunResultLike
) -> RunResultLike:
    """The result shown when every model failed.

    Keeps the newest attempt's bookkeeping, shows the preferred (most credible) result's
    payloads and error, and clears the trace's winner and its successful attempts. Works on
    ``EmbeddedRunResult`` or on OpenClaw-shaped dicts (returns the same kind).
    """
    if isinstance(latest_result, EmbeddedRunResult) and isinstance(
        preferred_result, EmbeddedRunResult
    ):
        return _merge_typed(latest_result, preferred_result)
    if isinstance(latest_result, Mapping) and isinstance(preferred_result, Mapping):
        return _merge_mapping(latest_result, preferred_result)
    raise TypeError("latest_result and preferred_result must both be EmbeddedRunResult or dicts")


def _merge_typed(latest: EmbeddedRunResult, preferred: EmbeddedRunResult) -> EmbeddedRunResult:
    trace = latest.execution_trace
    filtered = (
        tuple(a for a in trace.attempts if a.result != "success")
        if trace is not None and trace.attempts is not None
        else None
    )
    needs_normalizing = trace is not None and (
        trace.winner_provider is not None
        or trace.winner_model is not None
        or (
            filtered is not None
            and trace.attempts is not None
            and len(filtered) != len(trace.attempts)
        )
    )
    if latest is preferred and not needs_normalizing:
        return latest
    changes: dict[str, Any] = {
        "payloads": preferred.payloads,
        "error": preferred.error,
        "error_kind": preferred.error_kind,
        "error_fallback_safe": preferred.error_fallback_safe,
        "error_terminal_presentation": preferred.error_terminal_presentation,
    }
    if needs_normalizing and trace is not None:
        changes["execution_trace"] = ExecutionTrace(None, None, filtered or None)
    return dataclasses.replace(latest, **changes)


def _merge_mapping(latest: Mapping[str, Any], preferred: Mapping[str, Any]) -> dict[str, Any]:
    meta = dict(latest.get("meta") or {})
    trace = meta.get("executionTrace")
    attempts = trace.get("attempts") if isinstance(trace, Mapping) else None
    filtered = (
        [a for a in attempts if not (isinstance(a, Mapping) and a.get("result") == "success")]
        if isinstance(attempts, list)
        else None
    )
    needs_normalizing = isinstance(trace, Mapping) and (
        trace.get("winnerProvider") is not None
        or trace.get("winnerModel") is not None
        or (filtered is not None and isinstance(attempts, list) and len(filtered) != len(attempts))
    )
    if latest is preferred and not needs_normalizing:
        return dict(latest)
    merged = dict(latest)
    merged["payloads"] = preferred.get("payloads")
    meta["error"] = (preferred.get("meta") or {}).get("error")
    if needs_normalizing and isinstance(trace, Mapping):
        normalized = dict(trace)
        normalized["winnerProvider"] = None
        normalized["winnerModel"] = None
        normalized["attempts"] = filtered or None
        meta["executionTrace"] = {k: v for k, v in normalized.items() if v is not None}
    merged["meta"] = meta
    return merged
