"""The OpenAI / Codex failure dialect (``openai``, ``openai-codex``, ``azure-openai-responses``).

OpenAI's own error codes, as OpenClaw's OpenAI provider hook reads them: ``server_error`` →
server_error and ``insufficient_quota`` → billing. (Codex wording such as "ran out of room in
the model's context window" is in core's overflow table; other runtimes relay it too.)
"""

from __future__ import annotations

from openclaw_runtime.failover import (
    FailoverReason,
    ProviderFailoverContext,
    ProviderFailoverOwner,
)

__all__ = [
    "OPENAI_FAILOVER_OWNER",
    "OPENAI_FAILOVER_PROVIDERS",
    "classify_openai_failover_code",
    "classify_openai_failover_reason",
]

OPENAI_FAILOVER_PROVIDERS: frozenset[str] = frozenset(
    {"openai", "openai-codex", "azure-openai-responses"}
)
_CODE_REASONS = {
    "SERVER_ERROR": FailoverReason.SERVER_ERROR,
    "INSUFFICIENT_QUOTA": FailoverReason.BILLING,
}


def classify_openai_failover_code(code: str | None) -> FailoverReason | None:
    """An OpenAI error code's reason."""
    if not isinstance(code, str):
        return None
    return _CODE_REASONS.get(code.strip().upper())


def classify_openai_failover_reason(context: ProviderFailoverContext) -> FailoverReason | None:
    """The OpenAI provider hook: structured codes only."""
    return classify_openai_failover_code(context.code)


OPENAI_FAILOVER_OWNER = ProviderFailoverOwner(
    id="openai",
    providers=OPENAI_FAILOVER_PROVIDERS,
    classify_failover_reason=classify_openai_failover_reason,
)
