"""What every pass of a candidate's attempt loop shares: its setup, state and vocabulary.

``ModelAttemptLoop`` (``attempt_loop``) is built from this base and two mixins along the
seams of the loop — the recovery chains (``attempt_recovery``) and the failure handling
(``attempt_failures``). This base resolves what a candidate needs before its first attempt
(the context-window guard, the output-token cap and reserve, the stream function, the
transcript policy, the auth profiles, the retry-iteration budget, the thinking level) and
holds the loop's state (retry counters, breaker, last failover reason), ``result`` and
``decide``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..failover import FailoverReason, ModelCandidate
from ..llm import Model, ThinkingLevel
from ..transcript import resolve_transcript_policy
from .attempt import AttemptFacts
from .auth_controller import AuthController, AuthProfilesUnavailableError
from .breaker import IdleTimeoutBreakerState
from .candidate import CandidateResult, RetryCounters, RunFailoverError
from .entry import (
    evaluate_context_window_guard,
    resolve_context_window_info,
    resolve_initial_thinking_level,
    resolve_output_token_cap,
)
from .events import AttemptDecision, ContextWindowWarning, ModelForwardCompat
from .retry_instructions import AttemptFacts as RetryFacts
from .retry_instructions import attempt_had_potential_side_effects
from .retry_limit import RunRetriesConfig, resolve_max_run_retry_iterations
from .run_state import DEFAULT_RESERVE_TOKENS, RunState
from .tool_policy import offered_run_tools

__all__ = [
    "RETRY",
    "CandidateLoopBase",
    "ClassifiedFailure",
    "reason_text",
    "to_retry_facts",
]

#: The loop goes round again.
RETRY = None


@dataclass(frozen=True, slots=True)
class ClassifiedFailure:
    """How an attempt failed, as the policy functions need it."""

    error_text: str | None
    reason: FailoverReason | None
    overflow: bool
    status: int | None
    code: str | None


def reason_text(reason: object) -> str | None:
    """A failover reason as event text (None stays None)."""
    return None if reason is None else str(reason)


def to_retry_facts(facts: AttemptFacts) -> RetryFacts:
    """The attempt's facts as the directed-retry detectors (``retry_instructions``) take them."""
    return RetryFacts(
        assistant_texts=facts.assistant_texts,
        assistant=facts.assistant,
        tool_metas=facts.tool_metas,
        last_tool_error=facts.last_tool_error,
        had_potential_side_effects=attempt_had_potential_side_effects(facts.tool_metas),
        items_started=len(facts.tool_metas),
        items_completed=len(facts.tool_metas),
    )


class CandidateLoopBase:
    """The state of the attempts against one model candidate, and their setup."""

    def __init__(self, run: RunState, candidate: ModelCandidate) -> None:
        self.run = run
        self.model: Model = run.runtime.resolve_model(candidate.ref)
        self.counters = RetryCounters()
        self.breaker = IdleTimeoutBreakerState()
        self.last_reason: FailoverReason | None = None
        self.first_attempt_of_run = run.total_attempts == 0

    # setup ------------------------------------------------------------------------------------

    async def _setup(self) -> None:
        run, model = self.run, self.model
        runtime, request, config = run.runtime, run.request, run.config
        guard = evaluate_context_window_guard(
            resolve_context_window_info(
                model_context_window=model.context_window,
                agent_context_tokens=config.agent.context_tokens,
            )
        )
        if guard.should_block:
            raise RunFailoverError(
                f"Model context window too small ({guard.tokens} tokens).",
                reason=FailoverReason.UNKNOWN,
            )
        if guard.should_warn:
            await run.emit(
                ContextWindowWarning(model.provider, model.id, guard.tokens, guard.source)
            )
        template = runtime.forward_compat_template(model.ref)
        if template is not None:
            await run.emit(ModelForwardCompat(model.provider, model.id, template))
        self.window = guard.tokens
        learned = runtime.learned_context_windows.get(model.ref)
        if learned is not None and learned < self.window:
            self.window = learned  # a limit this model's provider stated in an earlier run
        self.max_tokens = resolve_output_token_cap(
            request.max_tokens, config.agent.max_tokens, model.max_tokens
        )
        self.reserve = max(
            1, min(DEFAULT_RESERVE_TOKENS, self.max_tokens or DEFAULT_RESERVE_TOKENS)
        )
        self.stream_fn = runtime.stream_fn_for(model)
        self.tools = offered_run_tools(config, request, model)  # the tool policy (toolpolicy/)
        self.policy = resolve_transcript_policy(
            model.api,
            model.provider,
            model.id,
            model_reasoning=model.reasoning,
            allowed_tool_names=[tool.name for tool in self.tools],
        )
        self.sanitizers = runtime.transcript_sanitizers()
        self.auth = AuthController(
            store=run.services.auth_store,
            settings=config.auth,
            provider=model.provider,
            model_id=model.id,
            preferred=request.auth_profile,
            locked=request.auth_profile if request.lock_auth_profile else None,
            env=runtime.env,
            cooldown_policy=config.auth.cooldowns.policy(),
        )
        try:
            await self.auth.start()
        except AuthProfilesUnavailableError as exc:
            raise RunFailoverError(
                str(exc), reason=exc.reason or FailoverReason.RATE_LIMIT
            ) from None
        retries = config.agent.run_retries
        self.max_iterations = resolve_max_run_retry_iterations(
            self.auth.candidate_count,
            RunRetriesConfig(
                base=retries.base, per_profile=retries.per_profile, min=retries.min, max=retries.max
            ),
        )
        self.initial_thinking: ThinkingLevel = (
            run.thinking_level
            if model.ref == run.model.ref
            else resolve_initial_thinking_level(
                request.thinking_level,
                default=config.agent.thinking_level,
                model_reasoning=model.reasoning,
            )
        )
        self.thinking: ThinkingLevel = self.initial_thinking

    def result(self, status: str, **fields: Any) -> CandidateResult:
        """A result of this candidate with the profile in use."""
        return CandidateResult(
            status=status, model=self.model, auth_profile_id=self.auth.current, **fields
        )

    async def decide(self, attempt: int, action: str, reason: object, why: str) -> None:
        """Emit what the loop decided and why."""
        if self.run.wants(AttemptDecision.type):
            await self.run.emit(AttemptDecision(attempt, action, reason_text(reason), why))

    # the loop ---------------------------------------------------------------------------------
