"""A provider plugin's failure dialect (OpenClaw's provider ``classifyFailoverReason`` hooks).

``ProviderFailoverDialect`` holds what a plugin declares (the providers it owns, its structured
verdict, its overflow matcher, its message rules); ``classify.ProviderFailoverOwner`` adds the
full classification with that dialect. The overflow tables and the message rules type against
the dialect, so they need not import the procedure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

from .reasons import FAILOVER_REASONS, FailoverReason
from .text import normalize_optional_lower

__all__ = [
    "ProviderFailoverContext",
    "ProviderFailoverDialect",
    "ProviderMessageRule",
    "as_reason",
]

# --------------------------------------------------------------------------- provider owners


@dataclass(frozen=True, slots=True)
class ProviderFailoverContext:
    """What a provider owner sees of a failure (OpenClaw's ``ProviderFailoverErrorContext``)."""

    error_message: str
    provider: str | None = None
    status: int | None = None
    code: str | None = None
    error_type: str | None = None


#: ``(raw message, provider) -> reason``: a provider-gated message rule, run early (§1.3 step 2).
ProviderMessageRule: TypeAlias = Callable[[str, "str | None"], "FailoverReason | str | None"]


def as_reason(value: object) -> FailoverReason | None:
    if isinstance(value, FailoverReason):
        return value
    if isinstance(value, str) and value in FAILOVER_REASONS:
        return FailoverReason(value)
    return None


@dataclass(frozen=True)
class ProviderFailoverDialect:
    """A provider plugin's failure dialect: the providers it owns and how it reads them.

    ``classify_failover_reason`` and ``matches_context_overflow_error`` mirror OpenClaw's
    provider hooks; their answer is authoritative over the tables (the status mapping still
    applies). ``message_rules`` run in the message classifier right after the image checks.
    """

    id: str
    providers: frozenset[str] = frozenset()
    classify_failover_reason: Callable[[ProviderFailoverContext], object] | None = None
    matches_context_overflow_error: Callable[[ProviderFailoverContext], bool] | None = None
    message_rules: tuple[ProviderMessageRule, ...] = ()

    def owns(self, provider: str | None) -> bool:
        """Is ``provider`` (case-insensitive) one of this owner's providers?"""
        normalized = normalize_optional_lower(provider)
        return normalized is not None and (normalized == self.id or normalized in self.providers)

    def classify_reason(
        self,
        *,
        error_message: str,
        provider: str | None = None,
        status: int | None = None,
        code: str | None = None,
        error_type: str | None = None,
    ) -> FailoverReason | None:
        """The owner's own verdict (overflow first), or None."""
        context = ProviderFailoverContext(error_message, provider, status, code, error_type)
        if self.matches_context_overflow_error is not None and self.matches_context_overflow_error(
            context
        ):
            return FailoverReason.CONTEXT_OVERFLOW
        if self.classify_failover_reason is None:
            return None
        return as_reason(self.classify_failover_reason(context))
