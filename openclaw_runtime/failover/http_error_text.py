"""Is this text a provider's HTTP failure? (OpenClaw's ``isLikelyHttpErrorText``.)

An error string that starts with an HTTP status can be a real provider failure that must be
shown as one (formatted, never passed through raw), or ordinary prose that happens to begin
with a number. The newest OpenClaw answers from the classifier's facts rather than a list of
words: a CDN/HTML error page, or a status >= 400 whose text the failover classifier or the
provider-request facets recognise.

``classify_provider_request_facets`` is the twin of ``classifyProviderRequestFacets``: facts
finer than a failover reason that decide which copy to show (a generic 429 that may be quota,
a rejected conversation state, a provider-internal error, a raw 503).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from .classify import classify_failover_reason, extract_leading_http_status
from .patterns import js_regex
from .reasons import FailoverSignal

__all__ = [
    "CLOUDFLARE_HTML_ERROR_CODES",
    "ProviderRequestFacet",
    "classify_provider_request_facets",
    "is_cloudflare_or_html_error_page",
    "is_likely_http_error_text",
]

ProviderRequestFacet = Literal[
    "quota-429", "conversation-state", "provider-internal", "provider-internal-503"
]

#: Cloudflare's own origin-failure statuses: the body is Cloudflare's page, whatever it says.
CLOUDFLARE_HTML_ERROR_CODES = frozenset({521, 522, 523, 524, 525, 526, 530})

_HTML_PREFIX_RE = js_regex(r"^\s*(?:<!doctype\s+html\b|<html\b)", "i")
_HTML_CLOSE_RE = js_regex(r"<\/html>", "i")
_STANDALONE_HTML_ERROR_HINT_RE = js_regex(
    r"\bcloudflare\b|cdn-cgi\/challenge-platform|challenge-error-text"
    r"|enable javascript and cookies to continue|access denied|forbidden|service unavailable"
    r"|bad gateway|web server is down|captcha|attention required",
    "i",
)
_RAW_503_RE = js_regex(
    r"\b(?:(?:unexpected\s+status|http)\s*503|503\s+service unavailable)\b"
    r"|[\"'](?:status|code)[\"']\s*:\s*503\b",
    "i",
)
_RAW_429_RE = js_regex(r"\b(?:http\s*)?429\b|[\"'](?:status|code)[\"']\s*:\s*429\b", "i")


def is_cloudflare_or_html_error_page(raw: str) -> bool:
    """A CDN/HTML error page: a bare HTML page that says it is an error, or a 5xx with one."""
    trimmed = raw.strip()
    if not trimmed:
        return False
    if (
        _HTML_PREFIX_RE.search(trimmed)
        and _HTML_CLOSE_RE.search(trimmed)
        and _STANDALONE_HTML_ERROR_HINT_RE.search(trimmed)
    ):
        return True
    status = extract_leading_http_status(trimmed)
    if status is None or status.code < 500:
        return False
    if status.code in CLOUDFLARE_HTML_ERROR_CODES:
        return True
    return (
        status.code < 600
        and bool(_HTML_PREFIX_RE.search(status.rest))
        and bool(_HTML_CLOSE_RE.search(status.rest))
    )


def _is_conversation_state_error(lower: str) -> bool:
    return (
        ("custom tool call output is missing" in lower and "call id" in lower)
        or (
            "toolresult" in lower
            and "tooluse" in lower
            and "exceeds the number" in lower
            and "previous turn" in lower
        )
        or ("tool_use" in lower and "tool_result" in lower and "without" in lower)
        or "function call turn comes immediately after" in lower
        or "incorrect role information" in lower
        or "roles must alternate" in lower
        or "invalid_replay_transcript" in lower
    )


def classify_provider_request_facets(
    signal: FailoverSignal | Mapping[str, Any],
) -> ProviderRequestFacet | None:
    """OpenClaw's ``classifyProviderRequestFacets``: the copy-relevant fact, or None."""
    facts = (
        signal if isinstance(signal, FailoverSignal) else FailoverSignal.from_mapping(dict(signal))
    )
    message = facts.message or ""
    lower = message.lower()
    generic = (
        "an error occurred while processing your request" in lower
        or "something went wrong while processing your request" in lower
    )
    if generic and (facts.status == 429 or _RAW_429_RE.search(message)):
        return "quota-429"
    if _is_conversation_state_error(lower):
        return "conversation-state"
    if facts.status == 503 or _RAW_503_RE.search(message):
        return "provider-internal-503"
    if (
        "the ai service returned an internal error" in lower
        or "provider returned an internal error" in lower
        or (generic and ("server_error" in lower or "internal error" in lower))
    ):
        return "provider-internal"
    return None


def is_likely_http_error_text(raw: str) -> bool:
    """OpenClaw's ``isLikelyHttpErrorText`` (newest: decided by classified facts)."""
    if is_cloudflare_or_html_error_page(raw):
        return True
    status = extract_leading_http_status(raw)
    if status is None or status.code < 400:
        return False
    return (
        classify_failover_reason(raw) is not None
        or classify_provider_request_facets(FailoverSignal(status=status.code, message=raw))
        is not None
    )
