"""The outer failover loop: try the next model when one fails (``model-fallback-runner.ts``).

Auth-profile rotation for one model is the orchestrator's inner loop; this loop walks the
model chain. For each candidate it calls ``attempt_fn``; a failure is classified (the generic
classifier, or the runtime's plugin chain via ``hook_classifier``), the outer decision is
taken by ``resolve_model_fallback_decision``, and every decision is emitted as an event.

Rules from OpenClaw: a context overflow is re-raised unchanged (compaction owns it); an
unclassifiable error on the last candidate is re-raised unchanged; a TLS certificate failure
skips the provider's other candidates; runtime coordination errors (our own
``OpenClawRuntimeError``s other than ``ProviderError``) never consume fallbacks. When all fail,
a single attempt re-raises its own error; several raise ``FailoverExhaustedError``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, Literal, Protocol, TypeAlias, TypeVar

from .._exceptions import (
    ConfigurationError,
    FailoverExhaustedError,
    OpenClawRuntimeError,
    ProviderError,
)
from ..events import Event
from ..redaction import package_logger
from .aborted_result import is_aborted_run_result
from .classify import classify_failover_signal
from .events import (
    FallbackAttemptStart,
    FallbackCandidateSkipped,
    FallbackDecisionMade,
    FallbackExhausted,
    FallbackSucceeded,
    redact_secret_text,
)
from .policy import FailoverDecision, resolve_model_fallback_decision
from .reasons import FAILOVER_REASONS, FailoverClassification, FailoverReason, FailoverSignal
from .signals import signal_from_assistant_message

__all__ = [
    "Classifier",
    "FallbackAttempt",
    "ModelCandidate",
    "ModelFallbackRunResult",
    "ModelResultRejectedError",
    "ResultClassifier",
    "hook_classifier",
    "resolve_model_candidate_chain",
    "run_with_model_fallback",
    "signal_from_exception",
]

logger = package_logger(logging.getLogger("openclaw_runtime.failover"))

T = TypeVar("T")
RouteOrigin: TypeAlias = Literal["requested", "configured-fallback", "configured-primary"]
Classifier: TypeAlias = Callable[[FailoverSignal], "FailoverClassification | None"]
Emit: TypeAlias = Callable[[Event], Awaitable[None]]


# --------------------------------------------------------------------------- candidates


@dataclass(frozen=True, slots=True)
class ModelCandidate:
    """One model of a fallback chain and why it is in the chain."""

    provider: str
    model: str
    route_origin: RouteOrigin = "requested"
    auth_profile_id: str | None = None

    @property
    def ref(self) -> str:
        """``provider/model``."""
        return f"{self.provider}/{self.model}"

    @property
    def key(self) -> str:
        """Identity for de-duplication: provider ids are case-insensitive, model ids are not."""
        return f"{self.provider.strip().lower()}/{self.model.strip()}"


def _resolve_ref(
    raw: str, *, default_provider: str | None, aliases: Mapping[str, str]
) -> tuple[str, str] | None:
    text = raw.strip()
    if not text:
        return None
    target = aliases.get(text.lower())
    if target is not None:
        text = target.strip()
    provider, slash, model = text.partition("/")
    if slash:
        provider, model = provider.strip(), model.strip()
        return (provider, model) if provider and model else None
    if not default_provider:
        return None
    return default_provider, text


def _as_candidate(
    value: ModelCandidate | tuple[str, str] | str,
    origin: RouteOrigin,
    *,
    default_provider: str | None,
    aliases: Mapping[str, str],
) -> ModelCandidate | None:
    if isinstance(value, ModelCandidate):
        # frozen: a candidate that already has its origin is the same value
        return value if value.route_origin == origin else replace(value, route_origin=origin)
    if isinstance(value, tuple):
        provider, model = value
        return ModelCandidate(provider.strip(), model.strip(), origin)
    if isinstance(value, str):
        resolved = _resolve_ref(value, default_provider=default_provider, aliases=aliases)
        return ModelCandidate(*resolved, origin) if resolved else None
    raise TypeError(
        f"a model candidate must be 'provider/model', a pair or a ModelCandidate: {value!r}"
    )


def resolve_model_candidate_chain(
    primary: ModelCandidate | tuple[str, str] | str,
    fallbacks: Sequence[str | tuple[str, str] | ModelCandidate] = (),
    *,
    configured_primary: ModelCandidate | tuple[str, str] | str | None = None,
    fallbacks_override: Sequence[str | tuple[str, str] | ModelCandidate] | None = None,
    aliases: Mapping[str, str] | None = None,
    default_provider: str | None = None,
) -> list[ModelCandidate]:
    """OpenClaw's ``resolveModelCandidateChain``: the requested model first, then the
    fallbacks, then the configured primary; duplicates and unresolvable entries dropped.

    ``fallbacks_override`` (even empty) replaces ``fallbacks`` and leaves the configured
    primary out. Bare model ids take ``default_provider`` (default: the configured primary's
    provider, else the requested one); ``aliases`` maps alias → ``provider/model``.
    """
    alias_index = {key.strip().lower(): value for key, value in (aliases or {}).items()}
    configured = (
        _as_candidate(
            configured_primary,
            "configured-primary",
            default_provider=default_provider,
            aliases=alias_index,
        )
        if configured_primary is not None
        else None
    )
    requested = _as_candidate(
        primary,
        "requested",
        default_provider=default_provider or (configured.provider if configured else None),
        aliases=alias_index,
    )
    if requested is None:
        raise ConfigurationError(f"cannot resolve the requested model {primary!r}")
    fallback_provider = default_provider or (configured or requested).provider
    chain: list[ModelCandidate] = []
    seen: set[str] = set()

    def add(candidate: ModelCandidate | None) -> None:
        if candidate is None or not candidate.provider or not candidate.model:
            return
        if candidate.key in seen:
            return
        seen.add(candidate.key)
        chain.append(candidate)

    add(requested)
    entries = fallbacks_override if fallbacks_override is not None else fallbacks
    for entry in entries:
        add(
            _as_candidate(
                entry,
                "configured-fallback",
                default_provider=fallback_provider,
                aliases=alias_index,
            )
        )
    if fallbacks_override is None:
        add(configured)
    return chain


# --------------------------------------------------------------------------- attempts and results


@dataclass(frozen=True, slots=True)
class FallbackAttempt:
    """A failed candidate: what it was, what was decided, and the error (text redacted)."""

    candidate: ModelCandidate
    decision: FailoverDecision
    error: BaseException
    message: str
    status: int | None = None
    code: str | None = None

    @property
    def reason(self) -> FailoverReason | None:
        """The failure reason the decision carries."""
        return self.decision.reason

    @property
    def provider(self) -> str:
        """The candidate's provider."""
        return self.candidate.provider

    @property
    def model(self) -> str:
        """The candidate's model id."""
        return self.candidate.model


@dataclass(frozen=True, slots=True)
class ModelFallbackRunResult(Generic[T]):
    """The result of the chain: ``completed`` by ``candidate``, ``aborted`` (the candidate's
    run was aborted: no other model is tried and nothing succeeded), or ``exhausted`` with the
    most credible preserved result."""

    outcome: Literal["completed", "aborted", "exhausted"]
    result: T
    candidate: ModelCandidate
    attempts: tuple[FallbackAttempt, ...]


class ModelResultRejectedError(ProviderError):
    """A candidate returned a result that counts as a failure (see ``result_classifier``)."""

    def __init__(
        self, message: str, *, reason: FailoverReason, code: str | None, result: Any
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.code = code
        self.result = result


class _RejectionLike(Protocol):
    message: str
    reason: FailoverReason
    code: str


ResultClassifier: TypeAlias = Callable[[Any, ModelCandidate], "_RejectionLike | None"]


class ClassifyingHooks(Protocol):
    """What ``hook_classifier`` needs of the runtime's hooks (``Runtime.hooks``)."""

    def classify_failover(
        self, signal: FailoverSignal
    ) -> tuple[FailoverClassification | None, str | None]: ...


def hook_classifier(hooks: ClassifyingHooks) -> Classifier:
    """Classify through the runtime's ``classify_failover`` plugin chain (faults are skipped
    and recorded by the runtime)."""

    def classify(signal: FailoverSignal) -> FailoverClassification | None:
        classification, _plugin = hooks.classify_failover(signal)
        return classification

    return classify


def _finite_int(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value == value and abs(value) != float("inf") else None


def signal_from_exception(error: BaseException, candidate: ModelCandidate) -> FailoverSignal:
    """The facts an exception carries: an attached ``signal`` or ``assistant_message``, else
    its ``status``/``status_code``/``response.status_code``, ``code``, ``error_type`` and text."""
    attached = getattr(error, "signal", None)
    if isinstance(attached, FailoverSignal):
        signal = attached
    elif getattr(error, "assistant_message", None) is not None:
        signal = signal_from_assistant_message(error.assistant_message)  # type: ignore[attr-defined]
    else:
        response = getattr(error, "response", None)
        status = next(
            (
                found
                for found in (
                    _finite_int(getattr(error, "status", None)),
                    _finite_int(getattr(error, "status_code", None)),
                    _finite_int(getattr(response, "status_code", None)),
                )
                if found is not None
            ),
            None,
        )
        code = getattr(error, "code", None)
        error_type = getattr(error, "error_type", None)
        retry_after = getattr(error, "retry_after_ms", None)
        signal = FailoverSignal(
            status=status,
            code=code if isinstance(code, str) else None,
            error_type=error_type if isinstance(error_type, str) else None,
            message=str(error) or type(error).__name__,
            retry_after_ms=float(retry_after) if isinstance(retry_after, int | float) else None,
        )
    return replace(
        signal,
        provider=signal.provider or candidate.provider,
        model=signal.model or candidate.model,
    )


def _explicit_reason(error: BaseException) -> FailoverReason | None:
    value = getattr(error, "reason", None)
    if isinstance(value, FailoverReason):
        return value
    if isinstance(value, str) and value in FAILOVER_REASONS:
        return FailoverReason(value)
    return None


def _classify_error(
    error: BaseException, signal: FailoverSignal, classify: Classifier
) -> FailoverClassification | None:
    explicit = _explicit_reason(error)
    if explicit is not None:
        if explicit == FailoverReason.CONTEXT_OVERFLOW:
            return FailoverClassification.context_overflow()
        return FailoverClassification.of(explicit)
    try:
        return classify(signal)
    except Exception:
        logger.warning("failover classifier raised; using the generic classifier", exc_info=True)
        return classify_failover_signal(signal)


async def _emit(emit: Emit | None, event: Event) -> None:
    if emit is None:
        return
    try:
        await emit(event)
    except Exception:
        # An observer must never change the outcome of the chain.
        logger.warning("fallback event observer raised on %s", event.type, exc_info=True)


def _next_index(chain: Sequence[ModelCandidate], current: int, excluded: set[str]) -> int:
    for index in range(current + 1, len(chain)):
        if chain[index].provider.strip().lower() not in excluded:
            return index
    return len(chain)


def _coerce_candidate(value: ModelCandidate | tuple[str, str] | str) -> ModelCandidate:
    found = _as_candidate(value, "requested", default_provider=None, aliases={})
    if found is None:
        raise ConfigurationError(f"cannot resolve model candidate {value!r} (use 'provider/model')")
    return found if isinstance(value, ModelCandidate) else replace(found, route_origin="requested")


def _explain(
    decision: FailoverDecision,
    candidate: ModelCandidate,
    next_candidate: ModelCandidate | None,
    *,
    coordination: bool,
) -> str:
    reason = decision.reason or "unclassified"
    if coordination:
        return "a runtime error, not a provider failure: not falling back"
    if decision.action == "fallback_model" and next_candidate is not None:
        tls = " (its provider's other models are skipped)" if reason == "tls_certificate" else ""
        return f"{candidate.ref} failed ({reason}){tls}; trying {next_candidate.ref}"
    if decision.reason == FailoverReason.CONTEXT_OVERFLOW:
        return "context overflow is handled by compaction, not by another model: re-raising"
    if decision.action == "surface_error":
        return "nothing classified this error and no candidate is left: re-raising it unchanged"
    return f"{candidate.ref} failed ({reason}) and no candidate is left"


async def run_with_model_fallback(
    candidates: Sequence[ModelCandidate | tuple[str, str] | str],
    attempt_fn: Callable[[ModelCandidate], Awaitable[T]],
    *,
    classify: Classifier | None = None,
    classify_result: ResultClassifier | None = None,
    merge_exhausted_result: Callable[[T, T], T] | None = None,
    emit: Emit | None = None,
    fallback_configured: bool | None = None,
    result_aborted: Callable[[T], bool] | None = None,
) -> ModelFallbackRunResult[T]:
    """Run ``attempt_fn`` over the model chain until one candidate succeeds.

    * ``classify(signal)`` classifies a failure (default: the generic classifier; pass
      ``hook_classifier(runtime.hooks)`` for the plugin chain). A raising classifier falls
      back to the generic one.
    * ``classify_result(result, candidate)`` may reject a successful return (e.g. a
      ``ResultFallbackClassification``); a rejection with ``preserve_result_on_exhaustion``
      is returned as the ``exhausted`` outcome if nothing better comes.
    * ``merge_exhausted_result(latest, preferred)`` builds that outcome (e.g.
      ``merge_embedded_agent_run_result_for_model_fallback_exhaustion``).
    * ``emit(event)`` receives a ``Fallback*`` event for every step.
    * ``fallback_configured=False`` tries only the first candidate.
    * ``result_aborted(result)`` says a returned result is an aborted run (default
      ``is_aborted_run_result``): it ends the chain with outcome ``aborted`` and no
      ``FallbackSucceeded``, since an abort is neither a success nor a reason to fall back.
    """
    chain = [_coerce_candidate(candidate) for candidate in candidates]
    if not chain:
        raise ConfigurationError("run_with_model_fallback needs at least one model candidate")
    if fallback_configured is False:
        chain = chain[:1]
    classifier = classify or classify_failover_signal
    total = len(chain)
    attempts: list[FallbackAttempt] = []
    excluded: set[str] = set()
    last_error: BaseException | None = None
    latest_rejected: Any = None
    preserved: tuple[Any, ModelCandidate, int] | None = None
    has_latest_rejected = False
    index = 0
    while index < total:
        candidate = chain[index]
        await _emit(
            emit,
            FallbackAttemptStart(
                candidate.provider, candidate.model, index + 1, total, candidate.route_origin
            ),
        )
        try:
            result = await attempt_fn(candidate)
        except Exception as exc:
            error: BaseException = exc
        else:
            if (result_aborted or is_aborted_run_result)(result):
                return ModelFallbackRunResult("aborted", result, candidate, tuple(attempts))
            rejection = classify_result(result, candidate) if classify_result else None
            if rejection is None:
                await _emit(
                    emit,
                    FallbackSucceeded(
                        candidate.provider, candidate.model, index + 1, total, len(attempts)
                    ),
                )
                return ModelFallbackRunResult("completed", result, candidate, tuple(attempts))
            error = ModelResultRejectedError(
                rejection.message,
                reason=FailoverReason(rejection.reason),
                code=getattr(rejection, "code", None),
                result=result,
            )
            latest_rejected, has_latest_rejected = (result, candidate), True
            if getattr(rejection, "preserve_result_on_exhaustion", False):
                priority = int(getattr(rejection, "preserve_result_priority", 0) or 0)
                if preserved is None or priority >= preserved[2]:
                    preserved = (result, candidate, priority)

        coordination = isinstance(error, OpenClawRuntimeError) and not isinstance(
            error, ProviderError
        )
        signal = signal_from_exception(error, candidate)
        classification = None if coordination else _classify_error(error, signal, classifier)
        if classification is not None and classification.reason == FailoverReason.TLS_CERTIFICATE:
            excluded.add(candidate.provider.strip().lower())
        next_index = _next_index(chain, index, excluded)
        next_candidate = chain[next_index] if next_index < total else None
        if coordination:
            decision = FailoverDecision("surface_error", None)
        else:
            decision = resolve_model_fallback_decision(
                classification,
                error_message=signal.message,
                has_remaining_candidate=next_candidate is not None,
            )
        text = redact_secret_text(signal.message or type(error).__name__)
        attempts.append(
            FallbackAttempt(candidate, decision, error, text, signal.status, signal.code)
        )
        moving_on = decision.action == "fallback_model"
        await _emit(
            emit,
            FallbackDecisionMade(
                provider=candidate.provider,
                model=candidate.model,
                attempt=index + 1,
                total=total,
                action=decision.action,
                reason=None if decision.reason is None else str(decision.reason),
                error=text,
                explanation=_explain(
                    decision, candidate, next_candidate, coordination=coordination
                ),
                next_provider=next_candidate.provider if moving_on and next_candidate else None,
                next_model=next_candidate.model if moving_on and next_candidate else None,
                status=signal.status,
                code=signal.code,
            ),
        )
        last_error = error
        if decision.action == "surface_error":
            raise error
        if not moving_on:
            break
        for skipped in chain[index + 1 : next_index]:
            await _emit(
                emit,
                FallbackCandidateSkipped(
                    skipped.provider,
                    skipped.model,
                    "tls_certificate",
                    f"{skipped.provider} failed TLS certificate checks earlier in this chain",
                ),
            )
        index = next_index

    return await _finish(
        attempts,
        last_error,
        preserved,
        latest_rejected,
        has_latest_rejected,
        merge_exhausted_result,
        emit,
    )


async def _finish(
    attempts: list[FallbackAttempt],
    last_error: BaseException | None,
    preserved: tuple[Any, ModelCandidate, int] | None,
    latest_rejected: Any,
    has_latest_rejected: bool,
    merge: Callable[[Any, Any], Any] | None,
    emit: Emit | None,
) -> ModelFallbackRunResult[Any]:
    last_reason = attempts[-1].reason if attempts else None
    reason_text = None if last_reason is None else str(last_reason)
    if preserved is not None:
        result, candidate, _priority = preserved
        shown = candidate.ref
        if merge is not None and has_latest_rejected:
            # OpenClaw: the merged result carries the latest rejected candidate's bookkeeping
            latest, candidate = latest_rejected
            result = merge(latest, result)
        await _emit(
            emit,
            FallbackExhausted(
                len(attempts),
                "preserved_result",
                reason_text,
                f"every candidate failed; showing the preserved result of {shown}",
            ),
        )
        return ModelFallbackRunResult("exhausted", result, candidate, tuple(attempts))
    await _emit(
        emit,
        FallbackExhausted(
            len(attempts), "error", reason_text, f"all {len(attempts)} candidate(s) failed"
        ),
    )
    if len(attempts) <= 1 and last_error is not None:
        raise last_error
    summary = " | ".join(
        f"{a.candidate.ref}: {a.message}" + (f" ({a.reason})" if a.reason else "") for a in attempts
    )
    raise FailoverExhaustedError(
        f"All models failed ({len(attempts)}): {summary or 'unknown'}", attempts
    ) from last_error
