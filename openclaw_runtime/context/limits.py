"""How large one tool result may be, derived from the model's context window.

OpenClaw caps a live tool result twice: an absolute tier (16 k / 32 k / 64 k characters by
context size) and a share of the window (30 %, at four characters per token). The smaller
wins. The mid-turn context guard uses a looser, estimate-based cap (half the window in
weighted characters) because it runs on every request.
"""

from __future__ import annotations

import math

__all__ = [
    "DEFAULT_MAX_LIVE_TOOL_RESULT_CHARS",
    "IMAGE_CHAR_ESTIMATE",
    "LARGE_CONTEXT_MAX_LIVE_TOOL_RESULT_CHARS",
    "LARGE_CONTEXT_TOOL_RESULT_TOKENS",
    "MAX_TOOL_RESULT_CONTEXT_SHARE",
    "MIN_KEEP_CHARS",
    "MIN_PROMPT_BUDGET_RATIO",
    "MIN_PROMPT_BUDGET_TOKENS",
    "MIN_TOOL_RESULT_CONTEXT_MAX_CHARS",
    "RECOVERY_MIN_KEEP_CHARS",
    "SINGLE_TOOL_RESULT_CONTEXT_SHARE",
    "TOOL_RESULT_CHARS_PER_TOKEN_ESTIMATE",
    "XL_CONTEXT_MAX_LIVE_TOOL_RESULT_CHARS",
    "XL_CONTEXT_TOOL_RESULT_TOKENS",
    "calculate_max_tool_result_chars",
    "calculate_max_tool_result_chars_with_cap",
    "resolve_auto_live_tool_result_max_chars",
    "resolve_live_tool_result_max_chars",
    "resolve_tool_result_context_max_chars",
]

#: A single tool result should not take more than 30 % of the window.
MAX_TOOL_RESULT_CONTEXT_SHARE = 0.3
DEFAULT_MAX_LIVE_TOOL_RESULT_CHARS = 16_000
LARGE_CONTEXT_MAX_LIVE_TOOL_RESULT_CHARS = 32_000
XL_CONTEXT_MAX_LIVE_TOOL_RESULT_CHARS = 64_000
LARGE_CONTEXT_TOOL_RESULT_TOKENS = 100_000
XL_CONTEXT_TOOL_RESULT_TOKENS = 200_000

#: Truncation keeps at least this much of the head so the model knows what it was.
MIN_KEEP_CHARS = 2_000
#: Recovery (overflow) truncation may cut below that floor.
RECOVERY_MIN_KEEP_CHARS = 0

#: The context guard weighs tool-result characters double (two characters per token) ...
TOOL_RESULT_CHARS_PER_TOKEN_ESTIMATE = 2
#: ... counts an image as this many characters ...
IMAGE_CHAR_ESTIMATE = 8_000
#: ... and lets one result take half of the window, but never less than this.
SINGLE_TOOL_RESULT_CONTEXT_SHARE = 0.5
MIN_TOOL_RESULT_CONTEXT_MAX_CHARS = 1_024

#: Preemptive compaction always leaves the prompt at least this budget (see preemptive.py).
MIN_PROMPT_BUDGET_TOKENS = 8_000
MIN_PROMPT_BUDGET_RATIO = 0.5


def resolve_auto_live_tool_result_max_chars(context_window_tokens: float) -> int:
    """The absolute tier: 64 000 from 200 k tokens, 32 000 from 100 k, else 16 000.

    A non-finite window (unknown model) gets the smallest tier.
    """
    if not math.isfinite(context_window_tokens):
        return DEFAULT_MAX_LIVE_TOOL_RESULT_CHARS
    tokens = math.floor(context_window_tokens)
    if tokens >= XL_CONTEXT_TOOL_RESULT_TOKENS:
        return XL_CONTEXT_MAX_LIVE_TOOL_RESULT_CHARS
    if tokens >= LARGE_CONTEXT_TOOL_RESULT_TOKENS:
        return LARGE_CONTEXT_MAX_LIVE_TOOL_RESULT_CHARS
    return DEFAULT_MAX_LIVE_TOOL_RESULT_CHARS


def calculate_max_tool_result_chars_with_cap(
    context_window_tokens: float, hard_cap_chars: float
) -> int:
    """``min(floor(tokens · 0.3) · 4, max(1, cap))``: the 30 % share, bounded by a hard cap.

    An infinite window leaves only the cap; an infinite cap leaves only the share.
    """
    cap = max(1, _number(hard_cap_chars, "hard_cap_chars"))
    window = _number(context_window_tokens, "context_window_tokens")
    if math.isinf(window) and math.isinf(cap):
        raise ValueError("context_window_tokens and hard_cap_chars cannot both be infinite")
    if math.isinf(window):
        return math.floor(cap)
    share_chars = math.floor(window * MAX_TOOL_RESULT_CONTEXT_SHARE) * 4
    return share_chars if math.isinf(cap) else min(share_chars, math.floor(cap))


def calculate_max_tool_result_chars(context_window_tokens: float) -> int:
    """The live per-result cap with the automatic tier as hard cap."""
    return calculate_max_tool_result_chars_with_cap(
        context_window_tokens, resolve_auto_live_tool_result_max_chars(context_window_tokens)
    )


def resolve_live_tool_result_max_chars(
    context_window_tokens: float, configured_cap: int | None = None
) -> int:
    """The live per-result cap; a configured ``toolResultMaxChars`` replaces the auto tier."""
    cap = (
        configured_cap
        if configured_cap is not None
        else resolve_auto_live_tool_result_max_chars(context_window_tokens)
    )
    return calculate_max_tool_result_chars_with_cap(context_window_tokens, cap)


def resolve_tool_result_context_max_chars(context_window_tokens: float) -> int:
    """The context guard's per-result cap in weighted characters: half the window, ≥ 1024.

    ``max(1024, floor(tokens · 2 · 0.5))`` with ``tokens = max(1, floor(window))``.
    """
    tokens = max(1, math.floor(_finite(context_window_tokens, "context_window_tokens")))
    return max(
        MIN_TOOL_RESULT_CONTEXT_MAX_CHARS,
        math.floor(
            tokens * TOOL_RESULT_CHARS_PER_TOKEN_ESTIMATE * SINGLE_TOOL_RESULT_CONTEXT_SHARE
        ),
    )


def _number(value: float, name: str) -> float:
    """``value`` if it is a number other than NaN or -inf; a clear error otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if math.isnan(value) or value == -math.inf:
        raise ValueError(f"{name} must be a number or +inf, got {value!r}")
    return value


def _finite(value: float, name: str) -> float:
    """``value`` if it is a finite number; a clear error otherwise."""
    if not math.isfinite(_number(value, name)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return value
