"""Table tests for ``is_likely_http_error_text`` and ``classify_provider_request_facets``
(OpenClaw's ``isLikelyHttpErrorText`` / ``classifyProviderRequestFacets``)."""

from __future__ import annotations

from typing import Any

import pytest

from openclaw_runtime.failover.http_error_text import (
    classify_provider_request_facets,
    is_cloudflare_or_html_error_page,
    is_likely_http_error_text,
)

HTTP_TEXT_CASES = [
    # HTML pages from a CDN or proxy
    ("502 <!DOCTYPE html><html><body>Bad gateway</body></html>", True),
    ("521 Web server is down", True),
    ("530 origin unreachable", True),
    ("<!DOCTYPE html><html><head><title>Attention Required! | Cloudflare</title></html>", True),
    # a 4xx/5xx whose text the classifier recognises
    ("429 Too Many Requests", True),
    ("400 Bad Request: invalid model parameter", True),
    ("503 Service Unavailable", True),
    ("401 Unauthorized", True),
    # the facets alone are enough
    ("409 An error occurred while processing your request. code: 429", True),
    # not HTTP failures
    ("<html><body>Welcome home</body></html>", False),
    ("200 OK: everything is fine", False),
    ("302 Found", False),
    ("450 widgets were counted", False),
    ("The run finished with 500 lines of output", False),
    ("", False),
]


@pytest.mark.parametrize(("raw", "expected"), HTTP_TEXT_CASES)
def test_is_likely_http_error_text(raw: str, expected: bool) -> None:
    assert is_likely_http_error_text(raw) is expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("500 <html><body>oops</body></html>", True),
        ("500 plain text", False),
        ("404 <html><body>missing</body></html>", False),
        ("   ", False),
        ("<html>service unavailable</html>", True),
    ],
)
def test_cloudflare_or_html_error_page(raw: str, expected: bool) -> None:
    assert is_cloudflare_or_html_error_page(raw) is expected


FACET_CASES: list[tuple[dict[str, Any], str | None]] = [
    (
        {"status": 429, "message": "An error occurred while processing your request."},
        "quota-429",
    ),
    ({"message": 'Something went wrong while processing your request {"code": 429}'}, "quota-429"),
    ({"message": "400 roles must alternate between user and assistant"}, "conversation-state"),
    (
        {"message": "custom tool call output is missing for call id call_1"},
        "conversation-state",
    ),
    ({"message": "tool_use ids found without tool_result blocks"}, "conversation-state"),
    ({"status": 503, "message": "upstream is busy"}, "provider-internal-503"),
    ({"message": "unexpected status 503 from upstream"}, "provider-internal-503"),
    ({"message": "The AI service returned an internal error."}, "provider-internal"),
    (
        {"message": "An error occurred while processing your request: server_error"},
        "provider-internal",
    ),
    # a generic 429 without the processing wording is not the quota facet
    ({"status": 429, "message": "rate limit exceeded"}, None),
    ({"message": "fine"}, None),
]


@pytest.mark.parametrize(("signal", "facet"), FACET_CASES)
def test_provider_request_facets(signal: dict[str, Any], facet: str | None) -> None:
    assert classify_provider_request_facets(signal) == facet
