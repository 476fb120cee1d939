"""Tool-result limits (openclaw-spec §4, tool-result-limits.ts, seed 000 §6.5)."""

from __future__ import annotations

import math

import pytest

from openclaw_runtime.context.limits import (
    DEFAULT_MAX_LIVE_TOOL_RESULT_CHARS,
    MAX_TOOL_RESULT_CONTEXT_SHARE,
    MIN_KEEP_CHARS,
    RECOVERY_MIN_KEEP_CHARS,
    calculate_max_tool_result_chars,
    calculate_max_tool_result_chars_with_cap,
    resolve_auto_live_tool_result_max_chars,
    resolve_live_tool_result_max_chars,
    resolve_tool_result_context_max_chars,
)


def test_constants():
    assert MAX_TOOL_RESULT_CONTEXT_SHARE == 0.3
    assert DEFAULT_MAX_LIVE_TOOL_RESULT_CHARS == 16_000
    assert MIN_KEEP_CHARS == 2_000
    assert RECOVERY_MIN_KEEP_CHARS == 0


@pytest.mark.parametrize(
    ("context_tokens", "cap"),
    [
        (0, 16_000),
        (8_000, 16_000),
        (99_999, 16_000),
        (99_999.9, 16_000),  # floored before comparing
        (100_000, 32_000),
        (128_000, 32_000),
        (199_999, 32_000),
        (200_000, 64_000),
        (1_000_000, 64_000),
        (math.inf, 16_000),  # non-finite windows get the smallest tier
        (math.nan, 16_000),
        (-5, 16_000),
    ],
)
def test_auto_live_tiers(context_tokens, cap):
    assert resolve_auto_live_tool_result_max_chars(context_tokens) == cap


@pytest.mark.parametrize(
    ("context_tokens", "hard_cap", "expected"),
    [
        (128_000, 32_000, 32_000),  # share 153 600 > cap
        (8_000, 16_000, 9_600),  # floor(2400) · 4
        (10, 16_000, 12),  # floor(3) · 4
        (3, 16_000, 0),  # floor(0.9) = 0
        (1_000, 0, 1),  # the cap is at least 1
        (1_000, -50, 1),
        (100_000, 1_000_000, 120_000),
        (math.inf, 24_000, 24_000),  # an unbounded window leaves the cap
        (8_000, math.inf, 9_600),  # an unbounded cap leaves the share
    ],
)
def test_cap_takes_the_smaller_of_share_and_hard_cap(context_tokens, hard_cap, expected):
    assert calculate_max_tool_result_chars_with_cap(context_tokens, hard_cap) == expected


@pytest.mark.parametrize(
    ("context_tokens", "expected"),
    [(8_000, 9_600), (32_000, 16_000), (128_000, 32_000), (200_000, 64_000), (2_000_000, 64_000)],
)
def test_live_cap_uses_the_auto_tier(context_tokens, expected):
    assert calculate_max_tool_result_chars(context_tokens) == expected
    assert resolve_live_tool_result_max_chars(context_tokens) == expected


def test_live_cap_grows_with_the_window():
    assert calculate_max_tool_result_chars(200_000) > calculate_max_tool_result_chars(8_000)
    assert calculate_max_tool_result_chars(2_000_000) > DEFAULT_MAX_LIVE_TOOL_RESULT_CHARS


@pytest.mark.parametrize(
    ("context_tokens", "configured", "expected"),
    [(128_000, 24_000, 24_000), (8_000, 24_000, 9_600), (128_000, 100, 100)],
)
def test_configured_cap_replaces_the_tier_but_not_the_share(context_tokens, configured, expected):
    assert resolve_live_tool_result_max_chars(context_tokens, configured) == expected


@pytest.mark.parametrize(
    ("context_tokens", "expected"),
    [
        (1, 1_024),
        (1_000, 1_024),  # floor(1000 · 2 · 0.5) = 1000 < 1024
        (1_024, 1_024),
        (8_192, 8_192),
        (200_000, 200_000),
        (200_000.7, 200_000),
        (0, 1_024),
        (-3, 1_024),
    ],
)
def test_guard_cap_is_half_the_window_in_weighted_chars(context_tokens, expected):
    assert resolve_tool_result_context_max_chars(context_tokens) == expected


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        (
            lambda: calculate_max_tool_result_chars_with_cap(math.nan, 10),
            ValueError,
            "context_window",
        ),
        (lambda: calculate_max_tool_result_chars_with_cap(10, math.nan), ValueError, "hard_cap"),
        (lambda: calculate_max_tool_result_chars_with_cap("10", 10), TypeError, "context_window"),
        (
            lambda: calculate_max_tool_result_chars_with_cap(math.inf, math.inf),
            ValueError,
            "infinite",
        ),
        (lambda: resolve_tool_result_context_max_chars(math.inf), ValueError, "context_window"),
        (lambda: resolve_tool_result_context_max_chars(None), TypeError, "context_window"),
    ],
)
def test_bad_numbers_are_named(call, error, name):
    with pytest.raises(error, match=name):
        call()
