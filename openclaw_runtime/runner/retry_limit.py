"""Retry budgets of the attempt loop (spec §11.2, seed 001) and the retry-limit exit.

Every kind of retry has its own counter and maximum, so exhausting one (say reasoning-only
retries) leaves the others (empty-response, compaction) available. Above them all sits the
run's iteration budget, ``resolve_max_run_retry_iterations``: it grows with the number of
auth-profile candidates, because every profile deserves its turn, and is clamped so a run can
neither stop absurdly early nor spin forever.

When the budget is spent the loop asks the failover policy (stage ``retry_limit``) whether a
fallback model may take over; if not, it returns ``build_retry_limit_result``: one visible
error payload and ``meta.error.kind == "retry_limit"``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from .reply_payload import ReplyPayload

__all__ = [
    "BASE_RUN_RETRY_ITERATIONS",
    "COMPACTION_CONTINUATION_RETRY_LIMIT",
    "DEFAULT_EMPTY_RESPONSE_RETRY_LIMIT",
    "DEFAULT_MAX_OVERLOAD_PROFILE_ROTATIONS",
    "DEFAULT_MAX_RATE_LIMIT_PROFILE_ROTATIONS",
    "DEFAULT_OVERLOAD_FAILOVER_BACKOFF_MS",
    "DEFAULT_PLANNING_ONLY_RETRY_LIMIT",
    "DEFAULT_REASONING_ONLY_RETRY_LIMIT",
    "MAX_BEFORE_AGENT_FINALIZE_REVISIONS",
    "MAX_EMPTY_ERROR_RETRIES",
    "MAX_MISSING_ASSISTANT_RETRIES",
    "MAX_OVERFLOW_COMPACTION_ATTEMPTS",
    "MAX_RUN_RETRY_ITERATIONS",
    "MAX_SAME_MODEL_IDLE_TIMEOUT_RETRIES",
    "MAX_SAME_MODEL_RATE_LIMIT_RETRIES",
    "MAX_TIMEOUT_COMPACTION_ATTEMPTS",
    "MIN_RUN_RETRY_ITERATIONS",
    "RETRY_LIMIT_USER_TEXT",
    "RUN_RETRY_ITERATIONS_PER_PROFILE",
    "SAME_MODEL_RATE_LIMIT_BACKOFF_STEP_MS",
    "SAME_MODEL_RATE_LIMIT_MAX_BACKOFF_MS",
    "STRICT_AGENTIC_PLANNING_ONLY_RETRY_LIMIT",
    "RetryLimitResult",
    "RunRetriesConfig",
    "build_retry_limit_result",
    "format_retry_limit_message",
    "resolve_max_run_retry_iterations",
    "resolve_next_same_model_rate_limit_retry_count",
    "resolve_planning_only_retry_limit",
    "resolve_same_model_rate_limit_retry_delay_ms",
]

# --- the run's iteration budget (helpers.ts) ------------------------------------------------
BASE_RUN_RETRY_ITERATIONS: Final = 24
RUN_RETRY_ITERATIONS_PER_PROFILE: Final = 8
MIN_RUN_RETRY_ITERATIONS: Final = 32
MAX_RUN_RETRY_ITERATIONS: Final = 160

# --- per-kind maxima ---------------------------------------------------------------------------
#: Compactions triggered by a timeout (run/timeout-context-recovery.ts).
MAX_TIMEOUT_COMPACTION_ATTEMPTS: Final = 2
#: Compactions triggered by a context overflow (agent-compaction-constants.ts).
MAX_OVERFLOW_COMPACTION_ATTEMPTS: Final = 3
#: One extra same-model attempt after an idle timeout before failing over.
MAX_SAME_MODEL_IDLE_TIMEOUT_RETRIES: Final = 1
#: In-place rate-limit retries on the same model (about one provider RPM window).
MAX_SAME_MODEL_RATE_LIMIT_RETRIES: Final = 3
SAME_MODEL_RATE_LIMIT_BACKOFF_STEP_MS: Final = 10_000
SAME_MODEL_RATE_LIMIT_MAX_BACKOFF_MS: Final = 60_000
#: Resubmissions of a ``stopReason: "error"`` turn with zero output and no side effects.
MAX_EMPTY_ERROR_RETRIES: Final = 3
#: Resubmissions when an attempt produced no assistant message at all.
MAX_MISSING_ASSISTANT_RETRIES: Final = 1
#: One immediate continuation plus one follow-up before surfacing an incomplete turn.
DEFAULT_REASONING_ONLY_RETRY_LIMIT: Final = 2
DEFAULT_EMPTY_RESPONSE_RETRY_LIMIT: Final = 1
DEFAULT_PLANNING_ONLY_RETRY_LIMIT: Final = 1
STRICT_AGENTIC_PLANNING_ONLY_RETRY_LIMIT: Final = 2
#: Continuations after a compaction interrupted the visible final answer.
COMPACTION_CONTINUATION_RETRY_LIMIT: Final = 1
#: Extra passes a ``before_agent_finalize`` hook may request.
MAX_BEFORE_AGENT_FINALIZE_REVISIONS: Final = 3
#: Profile rotations per overload / rate-limit episode, and the backoff before an
#: overload failover (``auth.cooldowns.*`` in config may override them).
DEFAULT_MAX_OVERLOAD_PROFILE_ROTATIONS: Final = 1
DEFAULT_MAX_RATE_LIMIT_PROFILE_ROTATIONS: Final = 1
DEFAULT_OVERLOAD_FAILOVER_BACKOFF_MS: Final = 0

#: The visible payload text when the retry budget is exhausted and no fallback takes over.
RETRY_LIMIT_USER_TEXT: Final = (
    "Request failed after repeated internal retries. "
    "Please try again, or use /new to start a fresh session."
)

_CONFIG_KEYS: Final = {
    "base": "base",
    "perProfile": "per_profile",
    "per_profile": "per_profile",
    "min": "min",
    "max": "max",
}


@dataclass(frozen=True, slots=True)
class RunRetriesConfig:
    """``agents.defaults.runRetries``; None means "use OpenClaw's default"."""

    base: int | None = None
    per_profile: int | None = None
    min: int | None = None
    max: int | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | RunRetriesConfig | None) -> RunRetriesConfig:
        """Accept the whole OpenClaw config (``agents.defaults.runRetries``), the
        ``runRetries`` object itself (camelCase or snake_case keys), or an instance."""
        if config is None:
            return cls()
        if isinstance(config, RunRetriesConfig):
            return config
        if not isinstance(config, Mapping):
            raise TypeError(f"run retry config must be a mapping, got {type(config).__name__}")
        section: Any = config
        if "agents" in config:
            agents = config.get("agents")
            defaults = agents.get("defaults") if isinstance(agents, Mapping) else None
            section = defaults.get("runRetries") if isinstance(defaults, Mapping) else None
            if section is None:
                return cls()
        if not isinstance(section, Mapping):
            raise TypeError("agents.defaults.runRetries must be a mapping")
        values: dict[str, int | None] = {}
        for key, value in section.items():
            name = _CONFIG_KEYS.get(str(key))
            if name is None:
                raise ValueError(
                    f"unknown runRetries key {key!r} (expected base, perProfile, min, max)"
                )
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"runRetries.{key} must be an integer, got {value!r}")
            values[name] = value
        return cls(**values)


def resolve_max_run_retry_iterations(
    profile_candidate_count: int,
    config: Mapping[str, Any] | RunRetriesConfig | None = None,
) -> int:
    """The attempt budget: ``clamp(base + max(1, n) * perProfile, min, max)``.

    Defaults 24 + n·8 clamped to [32, 160], so zero or one profile gives 32. ``base`` and
    ``min`` are at least 1, ``perProfile`` at least 0, ``max`` at least ``min``.
    """
    if isinstance(profile_candidate_count, bool) or not isinstance(profile_candidate_count, int):
        raise TypeError(f"profile_candidate_count must be an int, got {profile_candidate_count!r}")
    retries = RunRetriesConfig.from_config(config)
    base = max(1, BASE_RUN_RETRY_ITERATIONS if retries.base is None else retries.base)
    per_profile = max(
        0,
        RUN_RETRY_ITERATIONS_PER_PROFILE if retries.per_profile is None else retries.per_profile,
    )
    min_limit = max(1, MIN_RUN_RETRY_ITERATIONS if retries.min is None else retries.min)
    max_limit = max(min_limit, MAX_RUN_RETRY_ITERATIONS if retries.max is None else retries.max)
    scaled = base + max(1, profile_candidate_count) * per_profile
    return min(max_limit, max(min_limit, scaled))


def resolve_planning_only_retry_limit(execution_contract: str | None = None) -> int:
    """2 under the ``strict-agentic`` execution contract, else 1."""
    return (
        STRICT_AGENTIC_PLANNING_ONLY_RETRY_LIMIT
        if execution_contract == "strict-agentic"
        else DEFAULT_PLANNING_ONLY_RETRY_LIMIT
    )


def resolve_same_model_rate_limit_retry_delay_ms(
    retries_so_far: int, retry_after_seconds: float | None = None
) -> int:
    """Linear backoff 10 s, 20 s, 30 s… capped at 60 s; a longer Retry-After wins (≤ 60 s)."""
    backoff = min(
        SAME_MODEL_RATE_LIMIT_MAX_BACKOFF_MS,
        SAME_MODEL_RATE_LIMIT_BACKOFF_STEP_MS * (max(0, retries_so_far) + 1),
    )
    retry_after_ms = (
        math.ceil(max(0.0, retry_after_seconds) * 1000)
        if retry_after_seconds is not None and math.isfinite(retry_after_seconds)
        else 0
    )
    return max(backoff, min(SAME_MODEL_RATE_LIMIT_MAX_BACKOFF_MS, retry_after_ms))


def resolve_next_same_model_rate_limit_retry_count(
    retries_so_far: int, *, retried_same_model_rate_limit: bool
) -> int:
    """Count up while the loop keeps retrying the same model on rate limits, else reset."""
    return max(0, retries_so_far) + 1 if retried_same_model_rate_limit else 0


def format_retry_limit_message(attempts: int, max_attempts: int) -> str:
    """``Exceeded retry limit after N attempts (max=M).`` (goes into ``meta.error.message``)."""
    return f"Exceeded retry limit after {attempts} attempts (max={max_attempts})."


@dataclass(frozen=True, slots=True)
class RetryLimitResult:
    """The run result when the retry budget (or the idle breaker) ends a run."""

    payloads: tuple[ReplyPayload, ...]
    message: str
    duration_ms: float
    agent_meta: Mapping[str, Any] | None = None
    replay_invalid: bool = False
    liveness_state: str | None = None

    @property
    def error_kind(self) -> str:
        """Always ``retry_limit``."""
        return "retry_limit"

    def to_dict(self) -> dict[str, Any]:
        """OpenClaw's ``EmbeddedAgentRunResult`` shape."""
        meta: dict[str, Any] = {"durationMs": self.duration_ms}
        if self.agent_meta is not None:
            meta["agentMeta"] = dict(self.agent_meta)
        if self.replay_invalid:
            meta["replayInvalid"] = True
        if self.liveness_state:
            meta["livenessState"] = self.liveness_state
        meta["error"] = {"kind": self.error_kind, "message": self.message}
        return {"payloads": [payload.to_dict() for payload in self.payloads], "meta": meta}


def build_retry_limit_result(
    message: str,
    *,
    duration_ms: float,
    agent_meta: Mapping[str, Any] | None = None,
    replay_invalid: bool = False,
    liveness_state: str | None = None,
) -> RetryLimitResult:
    """One visible error payload (``RETRY_LIMIT_USER_TEXT``) plus the retry-limit meta.

    ``message`` (``format_retry_limit_message(...)`` or the idle breaker's message) stays
    internal, in ``meta.error.message``. ``replay_invalid`` and ``liveness_state`` (the loop
    passes ``"blocked"``) are carried through so session recovery sees them.
    """
    return RetryLimitResult(
        payloads=(ReplyPayload(text=RETRY_LIMIT_USER_TEXT, is_error=True),),
        message=message,
        duration_ms=duration_ms,
        agent_meta=agent_meta,
        replay_invalid=replay_invalid,
        liveness_state=liveness_state,
    )
