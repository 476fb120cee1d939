"""What to do after a failure: OpenClaw's ``resolveRunFailoverDecision`` (spec §2) and the
outer model-fallback step, as pure functions over typed inputs.

The decision depends on *where* the run failed:

* ``RetryLimitDecisionInput`` — the attempt loop ran out of retries;
* ``PromptDecisionInput`` — the prompt (the model call) failed;
* ``AssistantDecisionInput`` — the assistant turn ended (``terminal`` says how).

This is the terminal-based (newest) API. The older flag-based API differed as follows: it took
``aborted``, ``timedOut``, ``idleTimedOut``, ``timedOutDuringCompaction``,
``timedOutDuringToolExecution`` and ``hasVisibleOutput`` flags instead of a terminal; an
LLM-phase or idle timeout rotated the profile (reason None) and then fell back with
``timeout``; an idle timeout during tool execution counted as model silence and rotated; and a
``refusal`` never rotated (surfaced with visible output, else fell back when configured).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, TypeAlias

from .http_status import failover_reason_from_classification
from .matchers import is_provider_request_size_ceiling_error
from .overflow import is_likely_context_overflow_error
from .reasons import FAILOVER_REASONS, FailoverClassification, FailoverReason

__all__ = [
    "CLI_TERMINAL_STOP_CODES",
    "AssistantDecisionInput",
    "AttemptTerminal",
    "FailoverAction",
    "FailoverDecision",
    "PromptDecisionInput",
    "RetryLimitDecisionInput",
    "RunFailoverDecisionInput",
    "coerce_run_failover_decision_input",
    "is_assistant_timeout_failure",
    "is_cli_terminal_stop_code",
    "is_terminal_format_failure",
    "merge_retry_failover_reason",
    "resolve_model_fallback_decision",
    "resolve_run_failover_decision",
    "should_escalate_retry_limit",
    "should_rotate_assistant",
    "should_rotate_prompt",
]

FailoverAction: TypeAlias = Literal[
    "continue_normal", "rotate_profile", "fallback_model", "surface_error", "return_error_payload"
]
_ACTIONS_WITHOUT_REASON = ("continue_normal", "return_error_payload")

#: Turns a CLI backend ended itself; their tool effects already ran, so never replay them.
CLI_TERMINAL_STOP_CODES: frozenset[str] = frozenset({"cli_max_turns", "cli_turn_stopped"})


@dataclass(frozen=True, slots=True)
class FailoverDecision:
    """The action to take and the reason it carries (None where OpenClaw has none)."""

    action: FailoverAction
    reason: FailoverReason | None = None

    def to_dict(self) -> dict[str, Any]:
        """OpenClaw's shape: ``{"action": ...}`` plus ``"reason"`` where the action has one."""
        if self.action in _ACTIONS_WITHOUT_REASON:
            return {"action": self.action}
        return {"action": self.action, "reason": None if self.reason is None else str(self.reason)}


# --------------------------------------------------------------------------- typed inputs


@dataclass(frozen=True, slots=True)
class AttemptTerminal:
    """How an attempt ended: ``ok``, ``timeout`` (phase, source, aborted) or ``aborted``
    (source). Timeout sources: observation, runtime, idle, run_budget, external; abort
    sources: yield_cleanup, runtime, external."""

    kind: Literal["ok", "timeout", "aborted"]
    phase: Literal["prompt", "tool_execution", "compaction"] | None = None
    source: str | None = None
    aborted: bool | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("ok", "timeout", "aborted"):
            raise ValueError(f"terminal kind must be ok, timeout or aborted, not {self.kind!r}")


@dataclass(frozen=True, slots=True)
class RetryLimitDecisionInput:
    """The attempt loop hit its retry limit."""

    stage: ClassVar[str] = "retry_limit"
    fallback_configured: bool
    failover_reason: FailoverReason | None


@dataclass(frozen=True, slots=True)
class PromptDecisionInput:
    """The prompt (model call) failed before an assistant turn completed."""

    stage: ClassVar[str] = "prompt"
    external_abort: bool
    fallback_configured: bool
    failover_failure: bool
    failover_reason: FailoverReason | None
    profile_rotated: bool
    allow_format_retry: bool = False
    failover_code: str | None = None
    harness_owns_transport: bool = False
    prompt_timeout_fallback_safe: bool = False
    timed_out_by_run_budget: bool = False


@dataclass(frozen=True, slots=True)
class AssistantDecisionInput:
    """An assistant turn ended; ``terminal`` says how."""

    stage: ClassVar[str] = "assistant"
    terminal: AttemptTerminal
    fallback_configured: bool
    failover_failure: bool
    failover_reason: FailoverReason | None
    profile_rotated: bool
    allow_format_retry: bool = False
    signal_owned_interruption: bool = False
    harness_owns_transport: bool = False


RunFailoverDecisionInput: TypeAlias = (
    RetryLimitDecisionInput | PromptDecisionInput | AssistantDecisionInput
)
_INPUTS: dict[str, type[Any]] = {
    "retry_limit": RetryLimitDecisionInput,
    "prompt": PromptDecisionInput,
    "assistant": AssistantDecisionInput,
}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _reason_value(value: object, where: str) -> FailoverReason | None:
    if value is None or isinstance(value, FailoverReason):
        return value
    if isinstance(value, str) and value in FAILOVER_REASONS:
        return FailoverReason(value)
    raise ValueError(
        f"{where}: {value!r} is not a failover reason; one of {list(FAILOVER_REASONS)}"
    )


def _terminal_value(value: object) -> AttemptTerminal:
    if isinstance(value, AttemptTerminal):
        return value
    if isinstance(value, Mapping):
        return _build(AttemptTerminal, value, "terminal")
    raise ValueError(f"terminal must be an AttemptTerminal or a mapping, not {value!r}")


def _build(cls: type[Any], data: Mapping[str, Any], where: str) -> Any:
    fields = {f.name: f for f in dataclasses.fields(cls)}
    by_key = {**{_camel(name): name for name in fields}, **{name: name for name in fields}}
    unknown = sorted(set(data) - set(by_key) - {"stage"})
    if unknown:
        raise ValueError(f"{where}: unknown field(s) {unknown}; known: {sorted(by_key)}")
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key == "stage":
            continue
        name = by_key[key]
        if name == "failover_reason":
            value = _reason_value(value, f"{where}.failoverReason")
        elif name == "terminal":
            value = _terminal_value(value)
        elif "bool" in str(fields[name].type) and value is not None and not isinstance(value, bool):
            raise ValueError(f"{where}.{_camel(name)} must be a bool, not {value!r}")
        values[name] = value
    missing = [
        _camel(name)
        for name, f in fields.items()
        if name not in values
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ValueError(f"{where}: missing required field(s) {missing}")
    return cls(**values)


def coerce_run_failover_decision_input(
    params: RunFailoverDecisionInput | Mapping[str, Any],
) -> RunFailoverDecisionInput:
    """A typed input from itself or from an OpenClaw-shaped dict (``{"stage": "prompt", ...}``)."""
    if isinstance(params, RetryLimitDecisionInput | PromptDecisionInput | AssistantDecisionInput):
        return params
    if not isinstance(params, Mapping):
        raise TypeError(f"expected a decision input or a mapping, got {type(params).__name__}")
    stage = params.get("stage")
    cls = _INPUTS.get(stage) if isinstance(stage, str) else None
    if cls is None:
        raise ValueError(f"stage must be one of {sorted(_INPUTS)}, not {stage!r}")
    built: RunFailoverDecisionInput = _build(cls, params, f"{stage} decision input")
    return built


# --------------------------------------------------------------------------- helpers


def is_cli_terminal_stop_code(code: str | None) -> bool:
    """``cli_max_turns`` / ``cli_turn_stopped``: the CLI ended the turn itself."""
    return code is not None and code in CLI_TERMINAL_STOP_CODES


def is_terminal_format_failure(params: PromptDecisionInput | AssistantDecisionInput) -> bool:
    """A format failure is the end of the line (same payload, same rejection) unless format
    retries are explicitly allowed."""
    return (
        params.failover_failure
        and params.failover_reason == FailoverReason.FORMAT
        and params.allow_format_retry is not True
    )


def should_escalate_retry_limit(params: RetryLimitDecisionInput) -> bool:
    """Retry-limit escalates to another model except for timeout, format and session expiry."""
    reason = params.failover_reason
    return bool(
        params.fallback_configured
        and reason is not None
        and reason
        not in (FailoverReason.TIMEOUT, FailoverReason.FORMAT, FailoverReason.SESSION_EXPIRED)
    )


#: Reasons no other auth profile can fix: the prompt stage goes straight to the next model.
_NEVER_ROTATE = frozenset(
    {FailoverReason.TIMEOUT, FailoverReason.TLS_CERTIFICATE, FailoverReason.MODEL_NOT_FOUND}
)


def should_rotate_prompt(params: PromptDecisionInput) -> bool:
    """A prompt failure rotates the profile unless it is a timeout, TLS, a model the provider
    does not know (another key of the same provider will not know it either) or terminal
    format."""
    return (
        params.failover_failure
        and params.failover_reason not in _NEVER_ROTATE
        and not is_terminal_format_failure(params)
    )


def is_assistant_timeout_failure(params: AssistantDecisionInput) -> bool:
    """An idle timeout, or a prompt-phase timeout, that was not a mere observation."""
    terminal = params.terminal
    return (
        terminal.kind == "timeout"
        and terminal.source != "observation"
        and (terminal.source == "idle" or terminal.phase == "prompt")
    )


def _is_concrete_non_timeout_failure(params: AssistantDecisionInput) -> bool:
    return (
        params.failover_failure
        and params.failover_reason is not None
        and params.failover_reason != FailoverReason.TIMEOUT
    )


def should_rotate_assistant(params: AssistantDecisionInput) -> bool:
    """Rotate after a concrete failure of a turn that was not aborted, or a model timeout.

    Run-budget timeouts never rotate; a harness that owns the transport handles its own
    timeouts unless a concrete non-timeout failure came with them.
    """
    terminal = params.terminal
    if terminal.kind == "timeout" and terminal.source == "run_budget":
        return False
    timeout_failure = is_assistant_timeout_failure(params)
    harness_owned_timeout = params.harness_owns_transport and (
        timeout_failure or params.failover_reason == FailoverReason.TIMEOUT
    )
    if harness_owned_timeout and not _is_concrete_non_timeout_failure(params):
        return False
    aborted = (terminal.kind == "aborted" and terminal.source != "yield_cleanup") or (
        terminal.kind == "timeout" and terminal.source != "observation" and terminal.aborted is True
    )
    return (not aborted and params.failover_failure) or timeout_failure


def merge_retry_failover_reason(
    previous: FailoverReason | str | None,
    failover_reason: FailoverReason | str | None,
    *,
    timed_out: bool = False,
) -> FailoverReason | None:
    """Newest variant: ``failoverReason ?? previous ?? (timedOut ? "timeout" : null)``.

    (Older variants put ``timedOut`` before ``previous``; there is no strength ordering.)
    """
    current = _reason_value(failover_reason, "failoverReason")
    if current is not None:
        return current
    earlier = _reason_value(previous, "previous")
    if earlier is not None:
        return earlier
    return FailoverReason.TIMEOUT if timed_out else None


# --------------------------------------------------------------------------- the decision


def _decide_retry_limit(params: RetryLimitDecisionInput) -> FailoverDecision:
    if should_escalate_retry_limit(params):
        return FailoverDecision("fallback_model", params.failover_reason)
    return FailoverDecision("return_error_payload")


def _decide_prompt(params: PromptDecisionInput) -> FailoverDecision:
    surface = FailoverDecision("surface_error", params.failover_reason)
    if (
        is_cli_terminal_stop_code(params.failover_code)
        or params.external_abort
        or params.timed_out_by_run_budget
    ):
        return surface
    if params.harness_owns_transport and params.failover_reason == FailoverReason.TIMEOUT:
        if params.prompt_timeout_fallback_safe is True and params.fallback_configured:
            return FailoverDecision("fallback_model", FailoverReason.TIMEOUT)
        return surface
    if not params.profile_rotated and should_rotate_prompt(params):
        return FailoverDecision("rotate_profile", params.failover_reason)
    if (
        params.fallback_configured
        and params.failover_failure
        and not is_terminal_format_failure(params)
    ):
        return FailoverDecision("fallback_model", params.failover_reason or FailoverReason.UNKNOWN)
    return surface


def _decide_assistant(params: AssistantDecisionInput) -> FailoverDecision:
    terminal = params.terminal
    surface = FailoverDecision("surface_error", params.failover_reason)
    if (
        params.signal_owned_interruption
        or (terminal.kind in ("aborted", "timeout") and terminal.source == "external")
        or is_terminal_format_failure(params)
    ):
        return surface
    if params.failover_failure and params.failover_reason == FailoverReason.TLS_CERTIFICATE:
        if params.fallback_configured:
            return FailoverDecision("fallback_model", FailoverReason.TLS_CERTIFICATE)
        return surface
    if params.failover_failure and params.failover_reason == FailoverReason.MODEL_NOT_FOUND:
        # no auth profile makes an unknown model known: straight to the next model
        if params.fallback_configured:
            return FailoverDecision("fallback_model", FailoverReason.MODEL_NOT_FOUND)
        return surface
    rotate = should_rotate_assistant(params)
    if rotate and not params.profile_rotated:
        return FailoverDecision("rotate_profile", params.failover_reason)
    if rotate and params.fallback_configured:
        if not _is_concrete_non_timeout_failure(params) and is_assistant_timeout_failure(params):
            return FailoverDecision("fallback_model", FailoverReason.TIMEOUT)
        return FailoverDecision("fallback_model", params.failover_reason or FailoverReason.UNKNOWN)
    if not rotate:
        return FailoverDecision("continue_normal")
    return surface


def resolve_run_failover_decision(
    params: RunFailoverDecisionInput | Mapping[str, Any],
) -> FailoverDecision:
    """OpenClaw's ``resolveRunFailoverDecision``: rotate the auth profile, fall back to another
    model, surface the error, continue normally, or return an error payload (spec §2.1)."""
    typed = coerce_run_failover_decision_input(params)
    if isinstance(typed, RetryLimitDecisionInput):
        return _decide_retry_limit(typed)
    if isinstance(typed, PromptDecisionInput):
        return _decide_prompt(typed)
    return _decide_assistant(typed)


def resolve_model_fallback_decision(
    classification: FailoverClassification | None,
    *,
    error_message: str | None,
    has_remaining_candidate: bool,
) -> FailoverDecision:
    """The outer loop's step after a candidate failed (``model-fallback-runner.ts``):

    * a context overflow (and not a provider request-size ceiling) belongs to compaction:
      ``surface_error`` now, re-raising the error unchanged;
    * an error nothing could classify, on the last candidate: ``surface_error`` unchanged;
    * otherwise, with a candidate left: ``fallback_model`` (reason ``unknown`` if unknown);
    * on the last candidate: ``return_error_payload`` (the chain is exhausted).
    """
    if (
        error_message
        and is_likely_context_overflow_error(error_message)
        and not is_provider_request_size_ceiling_error(error_message)
    ):
        return FailoverDecision("surface_error", FailoverReason.CONTEXT_OVERFLOW)
    reason = failover_reason_from_classification(classification)
    if has_remaining_candidate:
        return FailoverDecision("fallback_model", reason or FailoverReason.UNKNOWN)
    if reason is None:
        return FailoverDecision("surface_error", None)
    return FailoverDecision("return_error_payload", reason)
