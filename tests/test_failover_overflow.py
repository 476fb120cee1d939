"""Context-overflow detection (spec §1.5): the tables, the heuristic and silent overflow."""

from __future__ import annotations

import pytest

from openclaw_runtime.failover import (
    FailoverReason,
    ProviderFailoverOwner,
    classify_failover_reason,
    is_context_overflow,
    is_context_overflow_error,
    is_likely_context_overflow_error,
)
from openclaw_runtime.failover.overflow import (
    is_context_overflow_error_from_tables,
    is_reasoning_constraint_error_message,
    looks_like_provider_context_overflow_candidate,
    matches_context_overflow_message,
    resolve_context_input_tokens,
)
from openclaw_runtime.messages import AssistantMessage, Usage

GROQ_OVERSIZED_413 = (
    "413 Request too large for model `openai/gpt-oss-120b` in organization `org_x` service tier "
    "`on_demand` on tokens per minute (TPM): Limit 8000, Requested 8098, please reduce your "
    "message size and try again."
)
GROQ_THROTTLED_429 = (
    "429 Rate limit reached for model `openai/gpt-oss-120b` in organization `org_x` service tier "
    "`on_demand` on tokens per minute (TPM): Limit 8000, Used 7500, Requested 1000, please try "
    "again in 3.5s."
)


@pytest.mark.parametrize(
    "message",
    [
        "request_too_large",
        "context_overflow",
        "Prompt has 256,468 tokens, but the configured context size is 256,000 tokens",
        "INVALID_ARGUMENT: The request's maximum number of tokens was exceeded",
        "Request exceeds the maximum size",
        "context length exceeded",
        "This model's maximum context length is 8192 tokens",
        "prompt is too long: 213462 tokens > 200000 maximum",
        "prompt too long",
        "exceeds model context window",
        "exceeded model token limit: 262144",
        "input exceeds the maximum number of tokens",
        "Codex ran out of room in the model's context window",
        "The context window ran out of space",
        "Request size exceeds model context window",
        "Context overflow: compaction failed",
        "exceed context limit",
        "exceeds the models maximum context",
        "max_tokens would exceed the context",
        "input length would exceed context budget",
        "The input (40000 tokens) is longer than the model's context length",
        "413 Payload Too Large",
        "context_window_exceeded",
        "input length 14295 tokens exceeds the model limit",
        "上下文过长",
        "请压缩上下文",
        GROQ_OVERSIZED_413,
    ],
)
def test_failover_explicit_table(message):
    assert is_context_overflow_error_from_tables(message)
    assert is_context_overflow_error(message)


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("ValidationException: Input token count exceeds the maximum number of input tokens", True),
        ("ModelStreamErrorException: Input is too long for this model", True),
        ("ollama error: context length exceeded, too many tokens", True),
        ("total tokens exceeds the model's maximum limit of 4096", True),
        ("request (130000 tokens) exceeds available context size (131072 tokens)", True),
        ("Context size has been exceeded.", True),
        ("input is too long for model gpt-5.4", True),
        # provider-fallback wording needs the overflow-shaped gate
        ("rate limit: input is too long for the model", False),
        # TPM wording is a rate limit unless the request alone exceeds the limit
        ("413 request too large: 203557 tokens per minute (TPM)", False),
        (GROQ_THROTTLED_429, False),
        # reasoning constraints are never overflow
        ("reasoning is mandatory for this model; prompt too long", False),
        ("reasoning cannot be disabled: request exceeds maximum", False),
        ("", False),
        (None, False),
    ],
)
def test_tables_with_gates(message, expected):
    assert is_context_overflow_error_from_tables(message) is expected


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        (
            "Codex ran out of room in the model's context window. Start a new thread or clear "
            "earlier history before retrying.",
            True,
        ),
        (
            'Error rendering prompt with jinja template: "Cannot apply filter upper". You can '
            "override the prompt template in model settings.",
            False,
        ),
        (GROQ_OVERSIZED_413, True),
        (GROQ_THROTTLED_429, False),
        ("413 Request too large on tokens per minute (TPM): Limit 8000, please reduce.", False),
        ("Extra usage is required for long context requests.", True),
        ("429 rate limit: Extra usage is required for long context requests", True),
        ("insufficient credits: prompt too long", False),
        ("context window too small: minimum is 16000", False),
        ("rate limit exceeded for input tokens", False),
        ("the context overflowed the buffer", True),
        ("context window exceeds what we sent", True),
        ("input token length exceeds maximum", True),
        ("prompt exceeds the limit", True),
        ("prompt exceeds quota", False),
        ("requests per minute: prompt too large", False),
        ("reasoning is required", False),
        ("model not found", False),
        (None, False),
    ],
)
def test_is_likely_context_overflow_error(message, expected):
    assert is_likely_context_overflow_error(message) is expected


def test_request_size_ceiling_classifies_as_overflow_and_throttle_as_rate_limit():
    assert classify_failover_reason(GROQ_OVERSIZED_413) == FailoverReason.CONTEXT_OVERFLOW
    assert classify_failover_reason(GROQ_THROTTLED_429) == FailoverReason.RATE_LIMIT


@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("prompt is too long", True),
        ("request_too_large", True),
        ("input length and `max_tokens` exceed context limit: 1 + 2 > 3", True),
        ("input is too long for requested model", True),
        ("Your input exceeds the context window of this model", True),
        ("exceeds the model's maximum context length of 131072 tokens", True),
        ("exceeds maximum context length (131072)", True),
        ("The input token count (1196265) exceeds the maximum number of tokens allowed", True),
        ("This model's maximum prompt length is 131072", True),
        ("Please reduce the length of the messages or completion", True),
        ("This endpoint's maximum context length is 8192 tokens", True),
        ("exceeds the maximum allowed input length of 1,000 tokens", True),
        ("The input (9 tokens) is longer than the model's context length (8 tokens)", True),
        ("prompt token count of 5 exceeds the limit of 4", True),
        ("the request exceeds the available context size", True),
        ("tokens to keep is greater than the context length", True),
        ("invalid params, context window exceeds limit", True),
        ("Your request exceeded model token limit", True),
        ("tokens in request more than max tokens allowed", True),
        ("Prompt exceeds max length", True),
        ("too large for model with 32768 maximum context length", True),
        ("model_context_window_exceeded", True),
        ("prompt too long; exceeded max context length by 5 tokens", True),
        ("context_length_exceeded", True),
        ("too many tokens", True),
        ("token limit exceeded", True),
        ("413 status code (no body)", True),
        ("500 status code (no body)", False),
        ("maximum context length", False),
    ],
)
def test_assistant_error_scope(message, expected):
    assert matches_context_overflow_message(message, "assistant-error") is expected


def test_candidate_gate_and_reasoning_constraint():
    assert looks_like_provider_context_overflow_candidate("input too long for the model")
    assert not looks_like_provider_context_overflow_candidate("rate limit: input too long")
    assert not looks_like_provider_context_overflow_candidate("something went wrong")
    assert is_reasoning_constraint_error_message("This model requires reasoning")
    assert not is_reasoning_constraint_error_message("reasoning effort high")


def test_provider_owner_overflow_needs_an_overflow_shaped_message():
    owner = ProviderFailoverOwner(
        id="acme",
        matches_context_overflow_error=lambda ctx: "blob" in ctx.error_message,
    )
    assert is_context_overflow_error("blob request exceeds the limit", provider_owner=owner)
    assert not is_context_overflow_error("blob is weird", provider_owner=owner)
    assert not is_context_overflow_error("blob request exceeds the limit")


# --------------------------------------------------------------------------- silent overflow


def assistant(
    stop_reason: str = "stop", error_message: str | None = None, **usage
) -> AssistantMessage:
    return AssistantMessage(
        stop_reason=stop_reason, error_message=error_message, usage=Usage(**usage)
    )


@pytest.mark.parametrize(
    ("message", "window", "expected"),
    [
        (assistant("error", "prompt is too long: 1 tokens > 0"), None, True),
        (assistant("error", "ThrottlingException... Too many tokens, please wait"), None, True),
        (assistant("error", "Throttling error: Too many tokens, please wait"), None, False),
        (assistant("error", "Service unavailable: too many tokens"), None, False),
        (assistant("error", "rate limit: too many tokens"), None, False),
        (assistant("stop", input=1000, cache_read=50, cache_write=1), 1050, True),
        (assistant("stop", input=1000, cache_read=50), 1050, False),
        (assistant("stop", input=5000), None, False),
        (assistant("stop", input=5000), 0, False),
        (assistant("length", input=990, output=0), 1000, True),
        (assistant("length", input=989, output=0), 1000, False),
        (assistant("length", input=1000, output=1), 1000, False),
        (assistant("toolUse", input=5000), 1000, False),
    ],
)
def test_is_context_overflow(message, window, expected):
    assert is_context_overflow(message, window) is expected


def test_context_usage_state_decides_prompt_tokens():
    available = assistant(
        "stop", input=10, context_usage={"state": "available", "promptTokens": 2000}
    )
    assert resolve_context_input_tokens(available) == 2000
    assert is_context_overflow(available, 1000)
    unavailable = assistant("stop", input=5000, context_usage={"state": "unavailable"})
    assert resolve_context_input_tokens(unavailable) is None
    assert not is_context_overflow(unavailable, 1000)


def test_provider_refusal_is_never_overflow():
    refusal = AssistantMessage(
        stop_reason="error",
        error_message="prompt is too long",
        diagnostics=[{"type": "provider_refusal", "timestamp": 0}],
    )
    assert not is_context_overflow(refusal)
    wire = refusal.to_dict()
    assert not is_context_overflow(wire)
    wire.pop("diagnostics")
    assert is_context_overflow(wire)
