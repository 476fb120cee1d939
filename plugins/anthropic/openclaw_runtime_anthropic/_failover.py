"""The Anthropic failure dialect (``anthropic`` and the ``claude-cli`` backend).

Rows of OpenClaw's classifier that only mean something for Anthropic live here:

* error types/codes ``rate_limit_error`` → rate_limit and ``api_error`` → server_error
  (the provider's own descriptors; OpenClaw's Anthropic provider hook);
* Claude CLI prose: "You've hit your (session) limit" → rate_limit;
* Claude CLI logged-out texts (``Not logged in · Please run /login``, ``Failed to
  authenticate: OAuth session expired and could not be refreshed``) → auth, checked early in
  the message order, exactly where OpenClaw's core checks them for ``claude-cli``.

Everything else is the generic classifier, run with this owner.
"""

from __future__ import annotations

from openclaw_runtime.failover import (
    FailoverReason,
    ProviderFailoverContext,
    ProviderFailoverOwner,
)
from openclaw_runtime.failover.text import js_regex, normalize_lower

__all__ = [
    "ANTHROPIC_FAILOVER_OWNER",
    "ANTHROPIC_FAILOVER_PROVIDERS",
    "CLAUDE_CLI_PROVIDER",
    "classify_anthropic_failover_descriptor",
    "classify_anthropic_failover_reason",
    "is_claude_cli_auth_error",
]

CLAUDE_CLI_PROVIDER = "claude-cli"
ANTHROPIC_FAILOVER_PROVIDERS: frozenset[str] = frozenset({"anthropic", CLAUDE_CLI_PROVIDER})

_DESCRIPTOR_REASONS = {
    "RATE_LIMIT_ERROR": FailoverReason.RATE_LIMIT,
    "API_ERROR": FailoverReason.SERVER_ERROR,
}
_CLAUDE_CLI_USAGE_LIMIT_RE = js_regex(
    r"\byou(?:['\u2019]ve| have) hit your (?:session )?limit\b", "i"
)
_CLAUDE_CLI_AUTH_RE = js_regex(
    r"\bnot logged in\b\s*·\s*please run \/login\b"
    r"|\bfailed to authenticate:\s*oauth session expired and could not be refreshed\b",
    "i",
)


def classify_anthropic_failover_descriptor(value: str | None) -> FailoverReason | None:
    """Anthropic's error type/code descriptors."""
    if not isinstance(value, str):
        return None
    return _DESCRIPTOR_REASONS.get(value.strip().upper())


def classify_anthropic_failover_reason(context: ProviderFailoverContext) -> FailoverReason | None:
    """The Anthropic provider hook: descriptors first, then Claude CLI's usage-limit prose."""
    found = classify_anthropic_failover_descriptor(
        context.error_type
    ) or classify_anthropic_failover_descriptor(context.code)
    if found is not None:
        return found
    if normalize_lower(
        context.provider
    ) == CLAUDE_CLI_PROVIDER and _CLAUDE_CLI_USAGE_LIMIT_RE.search(context.error_message):
        return FailoverReason.RATE_LIMIT
    return None


def is_claude_cli_auth_error(raw: str, provider: str | None) -> bool:
    """Claude CLI's logged-out texts; only for the ``claude-cli`` provider, which must come
    from runner metadata so other CLIs do not inherit Claude's policy."""
    return normalize_lower(provider) == CLAUDE_CLI_PROVIDER and bool(
        _CLAUDE_CLI_AUTH_RE.search(raw)
    )


def _claude_cli_auth_rule(raw: str, provider: str | None) -> FailoverReason | None:
    return FailoverReason.AUTH if is_claude_cli_auth_error(raw, provider) else None


ANTHROPIC_FAILOVER_OWNER = ProviderFailoverOwner(
    id="anthropic",
    providers=ANTHROPIC_FAILOVER_PROVIDERS,
    classify_failover_reason=classify_anthropic_failover_reason,
    message_rules=(_claude_cli_auth_rule,),
)
