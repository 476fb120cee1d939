"""Transcript policy: what a provider accepts on replay, resolved from api/provider/model.

The flags are OpenClaw's ``TranscriptPolicy`` (defaults = ``DEFAULT_TRANSCRIPT_POLICY``), in
snake_case. :func:`resolve_transcript_policy` reproduces OpenClaw's resolution for the model
families this runtime ships (Anthropic Messages / Bedrock, Google Gemini, OpenAI-compatible
Chat Completions and Responses); OpenClaw lets provider plugins build their own policy, and here
a plugin does the same by returning ``dataclasses.replace(policy, ...)`` from its own code.

Run-specific inputs that sanitizers need (the allowed tool names) travel on the policy too, so
every sanitizer keeps the ``fn(messages, policy)`` signature.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "ANTHROPIC_APIS",
    "GOOGLE_APIS",
    "OPENAI_RESPONSES_APIS",
    "SIGNED_THINKING_PROVIDERS",
    "TranscriptPolicy",
    "provider_requires_signed_thinking",
    "resolve_transcript_policy",
    "should_allow_provider_owned_thinking_replay",
    "should_drop_claude_thinking_blocks",
    "should_merge_consecutive_user_turns",
]

SanitizeMode = Literal["full", "images-only"]

ANTHROPIC_APIS = frozenset({"anthropic-messages", "bedrock-converse-stream"})
GOOGLE_APIS = frozenset({"google-generative-ai", "google-gemini-cli"})
OPENAI_RESPONSES_APIS = frozenset(
    {"openai-responses", "openai-chatgpt-responses", "azure-openai-responses"}
)
#: Provider families whose thinking blocks carry signatures bound to the context prefix.
SIGNED_THINKING_PROVIDERS = frozenset({"anthropic", "amazon-bedrock", "anthropic-vertex"})
_REASONING_CONTENT_REPLAY_MODEL_IDS = frozenset(
    {
        "kimi-for-coding",
        "kimi-k2.5",
        "kimi-k2.6",
        "kimi-k2.7-code",
        "kimi-k2.7-code-highspeed",
        "kimi-k3",
        "kimi-k2-thinking",
        "kimi-k2-thinking-turbo",
        "mimo-v2-pro",
        "mimo-v2-omni",
        "mimo-v2.5",
        "mimo-v2.5-pro",
        "mimo-v2.6-pro",
    }
)
_CLAUDE_FAMILY_RE = re.compile(r"(?:^|[./:_-])claude(?:$|[./:_-])")
_CLAUDE_PRESERVES_THINKING_RE = re.compile(
    r"(?:^|-)claude-(?:fable-5|mythos-(?:5|preview)|opus-4-(?:5|6|7|8)|sonnet-(?:5|4-6))"
    r"(?=$|[^a-z0-9])"
)
_CLAUDE_OPUS_5_RE = re.compile(r"(?:^|-)claude-opus-5(?=$|[^a-z0-9])")
_BEDROCK_PREFIX_RE = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic\.")


@dataclass(frozen=True, slots=True)
class TranscriptPolicy:
    """Which sanitizers and replay rules apply to one model.

    ``enabled`` / ``disabled`` name sanitizers to force on or off; ``options`` carries
    provider-specific switches. The remaining fields are OpenClaw's policy flags, except its
    ``sanitizeToolCallIds`` / ``toolCallIdMode`` / ``preserveNativeAnthropicToolUseIds``:
    tool-call ids are rewritten by each provider's request builder, which knows the
    endpoint's id rules (``transcript.tool_call_ids``), so the policy does not carry them.
    """

    api: str
    provider: str
    model_id: str
    enabled: frozenset[str] = frozenset()
    disabled: frozenset[str] = frozenset()
    options: dict[str, Any] = field(default_factory=dict)
    sanitize_mode: SanitizeMode = "images-only"
    repair_tool_use_result_pairing: bool = True
    preserve_signatures: bool = False
    drop_thinking_blocks: bool = False
    drop_reasoning_from_history: bool = False
    apply_google_turn_ordering: bool = False
    validate_gemini_turns: bool = False
    validate_anthropic_turns: bool = False
    allow_synthetic_tool_results: bool = False
    append_only_runtime_context: bool = False
    #: Tool names the current run may call; ``None`` means "any well-formed name".
    allowed_tool_names: frozenset[str] | None = None
    #: Keep the latest assistant turn's thinking untouched (``None``: decide from the history).
    preserve_latest_assistant_thinking: bool | None = None
    image_max_dimension_px: int | None = None
    image_max_bytes: int | None = None

    def wants(self, sanitizer: str, default: bool) -> bool:
        """Whether a sanitizer should run: forced on/off by name, else ``default``."""
        if sanitizer in self.enabled:
            return True
        if sanitizer in self.disabled:
            return False
        return default

    @property
    def is_openai_responses(self) -> bool:
        """OpenAI Responses-family API (missing tool results are written ``aborted``)."""
        return self.api in OPENAI_RESPONSES_APIS


def _normalize_provider(provider: str | None) -> str:
    return (provider or "").strip().lower()


def provider_requires_signed_thinking(provider: str | None) -> bool:
    """Anthropic, Bedrock and Anthropic-on-Vertex sign thinking blocks."""
    return _normalize_provider(provider) in SIGNED_THINKING_PROVIDERS


def should_allow_provider_owned_thinking_replay(policy: TranscriptPolicy) -> bool:
    """Signed thinking turns may be replayed byte-for-byte (and so must not be edited)."""
    signed = policy.preserve_signatures or provider_requires_signed_thinking(policy.provider)
    return (
        policy.api in ANTHROPIC_APIS
        and policy.validate_anthropic_turns
        and signed
        and not policy.drop_thinking_blocks
    )


def should_merge_consecutive_user_turns(policy: TranscriptPolicy) -> bool:
    """Prefix-bound replay on the direct Messages API keeps user turns separate."""
    return not (policy.append_only_runtime_context and policy.api == "anthropic-messages")


def _claude_identity(model_id: str) -> str:
    """The canonical Claude id: last path segment, without Bedrock/region prefixes."""
    identity = model_id.strip().lower().rsplit("/", 1)[-1]
    return _BEDROCK_PREFIX_RE.sub("", identity)


def should_drop_claude_thinking_blocks(model_id: str | None) -> bool:
    """Older Claude models lose the cache prefix if old thinking blocks are replayed."""
    identity = _claude_identity(model_id or "")
    is_opus_5 = bool(_CLAUDE_OPUS_5_RE.search(identity))
    is_claude = identity.startswith("claude-") or is_opus_5
    preserves = is_opus_5 or bool(_CLAUDE_PRESERVES_THINKING_RE.search(identity))
    return is_claude and not preserves


def _requires_reasoning_content_replay(model_id: str) -> bool:
    normalized = model_id.strip().lower()
    if not normalized:
        return False
    final = [part for part in normalized.split("/") if part][-1:] or [normalized]
    candidates = [final[0]]
    colon_parts = [part for part in final[0].split(":") if part]
    if len(colon_parts) > 1:
        candidates += [colon_parts[0], colon_parts[-1]]
    return any(candidate in _REASONING_CONTENT_REPLAY_MODEL_IDS for candidate in candidates)


def resolve_transcript_policy(
    api: str | None,
    provider: str | None,
    model_id: str | None,
    *,
    model_reasoning: bool | None = None,
    allowed_tool_names: Iterable[str] | None = None,
) -> TranscriptPolicy:
    """The replay policy of one model (OpenClaw ``resolveTranscriptPolicy``).

    :param api: the wire API (``anthropic-messages``, ``google-generative-ai``,
        ``openai-completions``, ``openai-responses``...).
    :param provider: the provider id (``anthropic``, ``openrouter``...).
    :param model_id: the model id.
    :param model_reasoning: the model advertises ``reasoning`` (keeps reasoning content on
        OpenAI-compatible replay).
    :param allowed_tool_names: tools the run may call; tool calls to others are dropped.
    """
    api_name = (api or "").strip()
    provider_name = _normalize_provider(provider)
    model = (model_id or "").strip()
    lower_model = model.lower()
    is_google = api_name in GOOGLE_APIS
    is_anthropic = api_name in ANTHROPIC_APIS
    is_strict_openai_compatible = api_name == "openai-completions"
    is_responses = api_name in OPENAI_RESPONSES_APIS
    is_claude_responses = is_responses and bool(_CLAUDE_FAMILY_RE.search(lower_model))
    drop_thinking = is_anthropic and should_drop_claude_thinking_blocks(model)
    keep_reasoning = bool(model_reasoning) or _requires_reasoning_content_replay(model)
    return TranscriptPolicy(
        api=api_name,
        provider=provider_name,
        model_id=model,
        sanitize_mode="full" if is_google or is_anthropic else "images-only",
        repair_tool_use_result_pairing=True,
        preserve_signatures=is_anthropic,
        drop_thinking_blocks=drop_thinking,
        drop_reasoning_from_history=is_strict_openai_compatible and not keep_reasoning,
        apply_google_turn_ordering=is_google or is_strict_openai_compatible,
        validate_gemini_turns=is_google or is_strict_openai_compatible,
        validate_anthropic_turns=is_anthropic or is_strict_openai_compatible or is_claude_responses,
        allow_synthetic_tool_results=is_google or is_anthropic or is_responses,
        allowed_tool_names=None if allowed_tool_names is None else frozenset(allowed_tool_names),
    )
