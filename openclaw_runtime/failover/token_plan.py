"""A token plan's exhausted window is a rate limit, not an empty wallet.

Subscription "token plans" and "coding plans" (Alibaba/Qwen, MiniMax, Xiaomi MiMo and
others) sell a token allowance per rolling window. When the window is spent they answer
HTTP 429 with OpenAI's ``insufficient_quota`` code, the same code a prepaid account with
no balance sends. Classified as ``billing`` the profile would be disabled for hours (the
billing lane backs off from 10 minutes to a day); the allowance comes back when the window
rolls over, which is exactly what the ``rate_limit`` cooldown models.

A 429 counts as a token-plan quota when it carries ``insufficient_quota`` and either the
provider id names a token/coding plan or the text itself speaks of one.
"""

from __future__ import annotations

from .patterns import js_regex

__all__ = ["is_token_plan_provider", "is_token_plan_quota_429_message"]

_INSUFFICIENT_QUOTA_RE = js_regex(r"\binsufficient[_ ]quota\b", "i")
_PLAN_TEXT_RE = js_regex(r"\b(?:token|coding)[\s_-]?plans?\b", "i")
_PLAN_PROVIDER_RE = js_regex(r"(?:token|coding)[_-]?plan", "i")


def is_token_plan_provider(provider: str | None) -> bool:
    """The provider id names a token or coding plan (``qwen-token-plan``, ``coding-plan``)."""
    return bool(provider and _PLAN_PROVIDER_RE.search(provider))


def is_token_plan_quota_429_message(message: str, provider: str | None = None) -> bool:
    """``insufficient_quota`` from a token/coding plan (by provider id or by the text)."""
    if not _INSUFFICIENT_QUOTA_RE.search(message):
        return False
    return is_token_plan_provider(provider) or bool(_PLAN_TEXT_RE.search(message))
