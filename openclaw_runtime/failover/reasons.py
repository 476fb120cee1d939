"""The failover vocabulary: why a call failed, as facts in and a classification out.

``FailoverReason`` carries OpenClaw's 16 reason strings in OpenClaw's order; a classifier
answers a ``FailoverSignal`` with a ``FailoverClassification`` or ``None`` (no opinion).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

__all__ = [
    "FAILOVER_REASONS",
    "FailoverClassification",
    "FailoverReason",
    "FailoverSignal",
]


class FailoverReason(StrEnum):
    """Why a model call failed (OpenClaw's ``FAILOVER_REASONS``, same strings, same order)."""

    AUTH = "auth"
    AUTH_PERMANENT = "auth_permanent"
    FORMAT = "format"
    RATE_LIMIT = "rate_limit"
    OVERLOADED = "overloaded"
    BILLING = "billing"
    SERVER_ERROR = "server_error"
    TIMEOUT = "timeout"
    TLS_CERTIFICATE = "tls_certificate"
    CONTEXT_OVERFLOW = "context_overflow"
    MODEL_NOT_FOUND = "model_not_found"
    SESSION_EXPIRED = "session_expired"
    EMPTY_RESPONSE = "empty_response"
    NO_ERROR_DETAILS = "no_error_details"
    UNCLASSIFIED = "unclassified"
    UNKNOWN = "unknown"


FAILOVER_REASONS: tuple[FailoverReason, ...] = tuple(FailoverReason)


@dataclass(frozen=True, slots=True)
class FailoverSignal:
    """Everything known about one failure, as a classifier sees it."""

    status: int | None = None
    retry_after_ms: float | None = None
    code: str | None = None
    error_type: str | None = None
    message: str | None = None
    provider: str | None = None
    model: str | None = None
    details: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> FailoverSignal:
        """Accept OpenClaw's camelCase keys (``retryAfterMs``, ``errorType``) or snake_case."""

        def pick(*names: str) -> Any:
            for name in names:
                if name in data and data[name] is not None:
                    return data[name]
            return None

        details = pick("details") or ()
        return cls(
            status=pick("status"),
            retry_after_ms=pick("retry_after_ms", "retryAfterMs"),
            code=pick("code"),
            error_type=pick("error_type", "errorType"),
            message=pick("message"),
            provider=pick("provider"),
            model=pick("model"),
            details=tuple(str(d) for d in details),
        )


@dataclass(frozen=True, slots=True)
class FailoverClassification:
    """A classifier's answer: a reason, or the separate context-overflow kind."""

    kind: Literal["reason", "context_overflow"]
    reason: FailoverReason | None = None
    same_model_retry: bool | None = None

    @classmethod
    def of(
        cls, reason: FailoverReason | str, *, same_model_retry: bool | None = None
    ) -> FailoverClassification:
        """A ``{kind: "reason"}`` classification."""
        return cls("reason", FailoverReason(reason), same_model_retry)

    @classmethod
    def context_overflow(cls) -> FailoverClassification:
        """The ``{kind: "context_overflow"}`` classification."""
        return cls("context_overflow", None)

    @property
    def effective_reason(self) -> FailoverReason:
        """The reason, with overflow mapped to ``context_overflow``."""
        return self.reason if self.reason is not None else FailoverReason.CONTEXT_OVERFLOW
