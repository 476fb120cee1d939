"""Overflow wording of self-hosted servers (TGI's 422, LM Studio) and the token-plan 429.

Both overflow texts must make the run compact and retry (``context_overflow``), never a
``format`` failure that surfaces; a token plan's exhausted window must cool the profile down
like a rate limit, not disable it like an empty wallet.
"""

from __future__ import annotations

import pytest

from openclaw_runtime.failover.classify import classify_failover_reason, classify_failover_signal
from openclaw_runtime.failover.overflow import (
    is_context_overflow_error,
    is_likely_context_overflow_error,
)
from openclaw_runtime.failover.reasons import FailoverReason, FailoverSignal
from openclaw_runtime.failover.token_plan import (
    is_token_plan_provider,
    is_token_plan_quota_429_message,
)

TGI_SUM = (
    "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. "
    "Given: 4000 `inputs` tokens and 1000 `max_new_tokens`"
)
TGI_LESS_THAN = "Input validation error: `inputs` must have less than 8192 tokens. Given: 9001"
LM_STUDIO = (
    "Trying to keep the first 9000 tokens when context overflows. However, the model is loaded "
    "with context length of only 8192 tokens, which is not enough. Try to load the model with a "
    "larger context length, or provide a shorter input"
)
LM_STUDIO_TYPO = (
    "Trying to keep the first 4,500 tokens when context the overflows. However, the model is "
    "loaded with context length of only 4096 tokens"
)


@pytest.mark.parametrize("text", [TGI_SUM, TGI_LESS_THAN, LM_STUDIO, LM_STUDIO_TYPO])
def test_local_server_overflow_texts(text: str) -> None:
    assert is_context_overflow_error(text)
    assert is_likely_context_overflow_error(text)
    assert classify_failover_reason(text) == "context_overflow"


@pytest.mark.parametrize(
    ("status", "text"),
    [(422, TGI_SUM), (422, f"422 {TGI_LESS_THAN}"), (400, LM_STUDIO), (None, LM_STUDIO)],
)
def test_overflow_survives_the_status_mapping(status: int | None, text: str) -> None:
    classification = classify_failover_signal(FailoverSignal(status=status, message=text))
    assert classification is not None and classification.kind == "context_overflow"


@pytest.mark.parametrize(
    "text",
    [
        # other TGI validation errors stay format errors
        "Input validation error: `temperature` must be strictly positive",
        "Input validation error: `top_p` must be > 0.0 and < 1.0",
        "Input validation error: `inputs` cannot be empty",
        # LM Studio's wording without the overflow clause
        "Trying to keep the first message in the history",
    ],
)
def test_lookalikes_are_not_overflow(text: str) -> None:
    assert not is_context_overflow_error(text)
    assert classify_failover_signal(FailoverSignal(status=422, message=text)) != (
        classify_failover_signal(FailoverSignal(status=422, message=TGI_SUM))
    )


QUOTA_BODY = (
    '{"error":{"message":"You exceeded your current quota, please check your plan and billing '
    'details.","type":"insufficient_quota","code":"insufficient_quota"}}'
)
PLAN_BODY = (
    '{"error":{"code":"insufficient_quota","message":"Token plan quota exhausted for the '
    'current window","type":"insufficient_quota"}}'
)


@pytest.mark.parametrize(
    ("status", "message", "provider", "reason"),
    [
        # the token-plan window: rate_limit, by provider id or by the text
        (429, QUOTA_BODY, "qwen-token-plan", FailoverReason.RATE_LIMIT),
        (429, QUOTA_BODY, "alibaba-coding-plan-cn", FailoverReason.RATE_LIMIT),
        (429, QUOTA_BODY, "xiaomi-token_plan", FailoverReason.RATE_LIMIT),
        (429, PLAN_BODY, None, FailoverReason.RATE_LIMIT),
        (None, f"429 {PLAN_BODY}", "custom", FailoverReason.RATE_LIMIT),
        # a prepaid account with no balance stays billing
        (429, QUOTA_BODY, "openai", FailoverReason.BILLING),
        (429, QUOTA_BODY, None, FailoverReason.BILLING),
        # a token plan's 402 is not a 429: the 402 rules decide
        (402, PLAN_BODY, "qwen-token-plan", FailoverReason.BILLING),
    ],
)
def test_token_plan_insufficient_quota(
    status: int | None, message: str, provider: str | None, reason: FailoverReason
) -> None:
    classification = classify_failover_signal(
        FailoverSignal(status=status, message=message, provider=provider)
    )
    assert classification is not None and classification.reason == reason


@pytest.mark.parametrize(
    ("message", "provider", "expected"),
    [
        (QUOTA_BODY, "qwen-token-plan", True),
        (PLAN_BODY, None, True),
        ("insufficient quota on your coding plan", None, True),
        (QUOTA_BODY, "openai", False),
        ("token plan window exhausted", "qwen-token-plan", False),  # no insufficient_quota
    ],
)
def test_token_plan_predicate(message: str, provider: str | None, expected: bool) -> None:
    assert is_token_plan_quota_429_message(message, provider) is expected


@pytest.mark.parametrize(
    ("provider", "expected"),
    [("qwen-token-plan", True), ("codingplan", True), ("openai", False), (None, False)],
)
def test_token_plan_provider(provider: str | None, expected: bool) -> None:
    assert is_token_plan_provider(provider) is expected
