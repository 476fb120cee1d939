"""Events of the model-fallback loop: what failed, and why the next step was chosen.

They ride the same stream as the agent events so a UI can show *why* a run fell back. Error
texts in events pass through ``redact_secret_text`` (the process-wide redactor in
``openclaw_runtime.redaction``): provider errors sometimes echo keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..events import Event
from ..redaction import redact_diagnostic

__all__ = [
    "FallbackAttemptStart",
    "FallbackCandidateSkipped",
    "FallbackDecisionMade",
    "FallbackExhausted",
    "FallbackSucceeded",
    "redact_secret_text",
]


def redact_secret_text(text: str, *, limit: int = 1_000) -> str:
    """``text`` with secrets masked (``redaction.redact_diagnostic``), cut to ``limit`` chars."""
    text = redact_diagnostic(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(slots=True)
class FallbackAttemptStart(Event):
    """Candidate ``attempt`` of ``total`` is about to run."""

    type: ClassVar[str] = "fallback_attempt_start"
    provider: str
    model: str
    attempt: int
    total: int
    route_origin: str | None = None


@dataclass(slots=True)
class FallbackDecisionMade(Event):
    """A candidate failed: what failed (``error``, ``status``, ``code``), how it was classified
    (``reason``) and what happens next (``action``, ``next_*``, ``explanation``)."""

    type: ClassVar[str] = "fallback_decision"
    provider: str
    model: str
    attempt: int
    total: int
    action: str
    reason: str | None
    error: str
    explanation: str
    next_provider: str | None = None
    next_model: str | None = None
    status: int | None = None
    code: str | None = None


@dataclass(slots=True)
class FallbackCandidateSkipped(Event):
    """A candidate was not tried (e.g. its provider failed TLS certificate checks)."""

    type: ClassVar[str] = "fallback_candidate_skipped"
    provider: str
    model: str
    reason: str
    explanation: str


@dataclass(slots=True)
class FallbackSucceeded(Event):
    """A candidate produced an acceptable result."""

    type: ClassVar[str] = "fallback_succeeded"
    provider: str
    model: str
    attempt: int
    total: int
    previous_failures: int


@dataclass(slots=True)
class FallbackExhausted(Event):
    """No candidate succeeded; ``outcome`` is ``error`` or ``preserved_result``."""

    type: ClassVar[str] = "fallback_exhausted"
    failures: int
    outcome: str
    reason: str | None
    explanation: str
