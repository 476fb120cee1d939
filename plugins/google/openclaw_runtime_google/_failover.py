"""The Gemini failure dialect (``google``, ``google-vertex``, ``google-gemini-cli``).

Google's gRPC status codes, as OpenClaw's shared Gemini provider hook reads them:
``UNAVAILABLE`` → overloaded, ``DEADLINE_EXCEEDED`` → timeout, ``INTERNAL`` → server_error.
``RESOURCE_EXHAUSTED`` (rate_limit) and ``INVALID_ARGUMENT … maximum number of tokens``
(overflow) stay in core: other providers use them too.
"""

from __future__ import annotations

from openclaw_runtime.failover import (
    FailoverReason,
    ProviderFailoverContext,
    ProviderFailoverOwner,
)

__all__ = [
    "GOOGLE_FAILOVER_OWNER",
    "GOOGLE_FAILOVER_PROVIDERS",
    "classify_google_failover_code",
    "classify_google_failover_reason",
]

GOOGLE_FAILOVER_PROVIDERS: frozenset[str] = frozenset(
    {"google", "google-vertex", "google-gemini-cli", "gemini-cli"}
)
_CODE_REASONS = {
    "UNAVAILABLE": FailoverReason.OVERLOADED,
    "DEADLINE_EXCEEDED": FailoverReason.TIMEOUT,
    "INTERNAL": FailoverReason.SERVER_ERROR,
}


def classify_google_failover_code(code: str | None) -> FailoverReason | None:
    """A Google gRPC status code's reason."""
    if not isinstance(code, str):
        return None
    return _CODE_REASONS.get(code.strip().upper())


def classify_google_failover_reason(context: ProviderFailoverContext) -> FailoverReason | None:
    """The Gemini provider hook: structured codes only."""
    return classify_google_failover_code(context.code)


GOOGLE_FAILOVER_OWNER = ProviderFailoverOwner(
    id="google",
    providers=GOOGLE_FAILOVER_PROVIDERS,
    classify_failover_reason=classify_google_failover_reason,
)
