"""The ordered transcript-sanitizer pipeline (OpenClaw ``sanitizeSessionHistory``).

Sanitizers are registered through ``register_transcript_sanitizers`` as ``(name, fn,
order)``; :func:`run_transcript_sanitizers` runs them in ``(order, name)`` order, each as
``fn(messages, policy) -> messages``. A sanitizer named in ``policy.disabled`` is skipped; the
built-ins also consult their policy flag (``policy.wants(name, flag)``), so ``policy.enabled``
can force one on. A sanitizer that raises is skipped (its input passes through) and reported
to ``on_error``; the run goes on.

The pipeline is deterministic and idempotent: the same input gives byte-identical output, and
sanitizing a sanitized history changes nothing (provider prompt caches depend on both).
Sanitizers never mutate their input.

Built-ins, in OpenClaw's order:

====  ===============================  =======================================================
20    ``images``                       image limits, blank-block cleanup
30    ``thinking_signatures``          stale (pre-compaction) and invalid signatures
40    ``drop_reasoning_from_history``  reasoning the provider cannot take back
45    ``drop_thinking_blocks``         thinking blocks for providers that reject old ones
50    ``tool_call_inputs``             unreplayable tool calls
60    ``tool_use_result_pairing``      results after their calls, synthetic missing results
70    ``tool_result_details``          opaque tool-result ``details``
80    ``stale_assistant_usage``        usage of turns the latest compaction summarised
90    ``google_turn_ordering``         ``(session bootstrap)`` before an assistant-first history
====  ===============================  =======================================================

**Reaching a fixed point.** One pass in OpenClaw's order is not idempotent: dropping a
malformed tool call can end the "tool turn in progress" that kept its reasoning, or remove the
latest assistant turn that was exempt from signature stripping, so the *next* request would
sanitize the history further. The runner therefore repeats the pipeline until a pass changes
nothing (at most ``max_passes``). The first pass is exactly OpenClaw's result; later passes
apply the same rules to it, as OpenClaw would on the next turn. A stage signals "unchanged"
by returning the message objects it was given (every built-in does); sanitizers that copy
unchanged messages only cost extra passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..containment import PluginGuard, component_unit
from ..messages import Usage
from .blank_user import fill_blank_user_turns
from .entries import parse_timestamp_ms
from .images import sanitize_session_messages_images
from .loop_tail import is_clean_text_block
from .pairing import sanitize_tool_use_result_pairing
from .pairing import strip_tool_result_details as _strip_details
from .policy import (
    TranscriptPolicy,
    provider_requires_signed_thinking,
    should_allow_provider_owned_thinking_replay,
)
from .replay import sanitize_google_turn_ordering
from .thinking import (
    drop_reasoning_from_history,
    drop_thinking_blocks,
    should_preserve_latest_assistant_thinking,
    strip_invalid_thinking_signatures,
    strip_stale_thinking_signatures_for_compaction_replay,
)
from .tool_inputs import sanitize_tool_call_inputs
from .wire import role_of, wget, wset

__all__ = [
    "BUILTIN_SANITIZERS",
    "Sanitizer",
    "SanitizerSpec",
    "earlier_thinking_dropped",
    "guard_transcript_sanitizer",
    "has_declared_types",
    "is_plain_user_message",
    "is_plain_user_turn",
    "reasoning_dropped",
    "run_transcript_sanitizers",
    "sanitize_session_history",
    "signed_thinking_kept",
    "strip_stale_assistant_usage_before_latest_compaction",
    "thinking_untouched",
]

Sanitizer = Callable[[list[Any], TranscriptPolicy], Sequence[Any]]
OnError = Callable[[str, str | None, BaseException], None]


@dataclass(frozen=True, slots=True)
class SanitizerSpec:
    """A named pipeline stage."""

    name: str
    fn: Sanitizer
    order: int = 100
    plugin: str | None = None


# --------------------------------------------------------------------------- built-in stages


def _blank_user_turns(messages: list[Any], policy: TranscriptPolicy) -> list[Any]:
    return fill_blank_user_turns(messages)


def _images(messages: list[Any], policy: TranscriptPolicy) -> list[Any]:
    if not policy.wants("images", True):
        return messages
    return sanitize_session_messages_images(messages, max_bytes=policy.image_max_bytes)


def _thinking_signatures_on(policy: TranscriptPolicy) -> bool:
    signed = provider_requires_signed_thinking(policy.provider) or policy.preserve_signatures
    return policy.wants("thinking_signatures", signed)


def _drop_reasoning_on(policy: TranscriptPolicy) -> bool:
    return policy.wants("drop_reasoning_from_history", policy.drop_reasoning_from_history)


def _drop_thinking_on(policy: TranscriptPolicy) -> bool:
    return policy.wants("drop_thinking_blocks", policy.drop_thinking_blocks)


def thinking_untouched(policy: TranscriptPolicy) -> bool:
    """Whether no built-in stage reads or changes an assistant turn's thinking blocks under
    ``policy``: the signature stage, both reasoning drops and the signed-turn replay rule of
    the tool-call stage are all off (a reasoning model on OpenAI-compatible replay, Gemini).
    A turn's thinking then comes out as it went in, wherever the turn stands
    (``loop_tail``: a tool group whose turn thinks is clean then)."""
    return not (
        _thinking_signatures_on(policy)
        or _drop_reasoning_on(policy)
        or _drop_thinking_on(policy)
        or (
            policy.wants("tool_call_inputs", True)
            and should_allow_provider_owned_thinking_replay(policy)
        )
    )


def signed_thinking_kept(policy: TranscriptPolicy) -> bool:
    """Whether a tool turn whose thinking blocks all carry a replayable signature comes out of
    the built-in stages as it went in, wherever it stands, as long as it is no older than the
    compaction and no earlier turn named its calls' ids: no reasoning drop and no Claude
    thinking drop run (Claude models that keep their thinking, on the Anthropic API). The
    signature stage then only strips turns older than the compaction and drops unsigned
    blocks; the signed-turn replay rule keeps a well-formed turn whose ids are new
    (``loop_tail``, "Signed thinking"). True wherever ``thinking_untouched`` is."""
    return not (_drop_reasoning_on(policy) or _drop_thinking_on(policy))


def earlier_thinking_dropped(policy: TranscriptPolicy) -> bool:
    """Whether the stages remove the thinking blocks of every assistant turn but the latest
    and touch thinking no other way than the signature stage does: the Claude thinking drop
    runs, no reasoning drop, no signed-turn replay rule (older Claude models on the Anthropic
    API). A tool turn clean but for its thinking then comes out as its copy without it unless
    it is the latest, and as it is when latest if every block is signed and it is no older
    than the compaction (``loop_tail``, "Dropped thinking")."""
    return (
        _drop_thinking_on(policy)
        and not _drop_reasoning_on(policy)
        and not (
            policy.wants("tool_call_inputs", True)
            and should_allow_provider_owned_thinking_replay(policy)
        )
    )


def reasoning_dropped(policy: TranscriptPolicy) -> bool:
    """Whether the stages remove the thinking of every assistant turn but the current tool
    turn's first, and touch thinking no other way: the reasoning drop runs, no signature
    stage, no Claude thinking drop, no signed-turn replay rule (OpenAI-compatible replay of a
    model not marked as reasoning). A tool turn clean but for its thinking then comes out as
    its copy without it, unless it opens the tool loop (``loop_tail``, "Dropped thinking")."""
    return _drop_reasoning_on(policy) and not (
        _thinking_signatures_on(policy)
        or _drop_thinking_on(policy)
        or (
            policy.wants("tool_call_inputs", True)
            and should_allow_provider_owned_thinking_replay(policy)
        )
    )


def _thinking_signatures(messages: list[Any], policy: TranscriptPolicy) -> list[Any]:
    if not _thinking_signatures_on(policy):
        return messages
    preserve = policy.preserve_latest_assistant_thinking
    if preserve is None:
        preserve = should_preserve_latest_assistant_thinking(messages)
    return strip_invalid_thinking_signatures(
        strip_stale_thinking_signatures_for_compaction_replay(messages),
        preserve_latest_assistant=preserve,
    )


def _drop_reasoning(messages: list[Any], policy: TranscriptPolicy) -> list[Any]:
    if not _drop_reasoning_on(policy):
        return messages
    return drop_reasoning_from_history(messages)


def _drop_thinking(messages: list[Any], policy: TranscriptPolicy) -> list[Any]:
    if not _drop_thinking_on(policy):
        return messages
    return drop_thinking_blocks(messages)


def _tool_call_inputs(messages: list[Any], policy: TranscriptPolicy) -> list[Any]:
    if not policy.wants("tool_call_inputs", True):
        return messages
    return sanitize_tool_call_inputs(
        messages,
        allowed_tool_names=policy.allowed_tool_names,
        allow_provider_owned_thinking_replay=should_allow_provider_owned_thinking_replay(policy),
    )


def _pairing(messages: list[Any], policy: TranscriptPolicy) -> list[Any]:
    if not policy.wants("tool_use_result_pairing", policy.repair_tool_use_result_pairing):
        return messages
    return sanitize_tool_use_result_pairing(
        messages,
        errored_assistant_result_policy="drop",
        missing_tool_result_text="aborted" if policy.is_openai_responses else None,
    )


def _tool_result_details(messages: list[Any], policy: TranscriptPolicy) -> list[Any]:
    if not policy.wants("tool_result_details", True):
        return messages
    return _strip_details(messages)


def _zero_usage_wire() -> dict[str, Any]:
    """OpenClaw's ``makeZeroUsageSnapshot`` in wire form (a fresh dict each time)."""
    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return {
        "input": 0,
        "output": 0,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": 0,
        "cost": cost,
    }


def _is_zero_usage(usage: Any) -> bool:
    if isinstance(usage, Usage):
        usage = usage.to_dict()
    return bool(usage == _zero_usage_wire())


def strip_stale_assistant_usage_before_latest_compaction(messages: Sequence[Any]) -> list[Any]:
    """Zero the usage of assistant turns the latest compaction summary already covers.

    Stale by timestamp (≤ the summary's) or, for legacy summaries, by position before it.
    The usage stays structurally valid so token accounting keeps working.
    """
    latest_index = -1
    latest_stamp: float | None = None
    for index, message in enumerate(messages):
        if role_of(message) == "compactionSummary":
            latest_index = index
            latest_stamp = parse_timestamp_ms(wget(message, "timestamp"))
    if latest_index < 0:
        return messages if isinstance(messages, list) else list(messages)
    out = list(messages)
    touched = False
    for index, message in enumerate(out):
        if role_of(message) != "assistant":
            continue
        usage = wget(message, "usage")
        if not usage or _is_zero_usage(usage):
            continue
        stamp = parse_timestamp_ms(wget(message, "timestamp"))
        stale_by_time = latest_stamp is not None and stamp is not None and stamp <= latest_stamp
        if not stale_by_time and index >= latest_index:
            continue
        zero: Any = Usage() if isinstance(usage, Usage) else _zero_usage_wire()
        out[index] = wset(message, usage=zero)
        touched = True
    return out if touched else messages if isinstance(messages, list) else list(messages)


def _stale_usage(messages: list[Any], policy: TranscriptPolicy) -> list[Any]:
    if not policy.wants("stale_assistant_usage", True):
        return messages
    return strip_stale_assistant_usage_before_latest_compaction(messages)


def _google_turn_ordering(messages: list[Any], policy: TranscriptPolicy) -> list[Any]:
    if not policy.wants("google_turn_ordering", policy.apply_google_turn_ordering):
        return messages
    return sanitize_google_turn_ordering(messages)


#: The core sanitizers, registered by the ``builtin.transcript`` plugin.
BUILTIN_SANITIZERS: tuple[SanitizerSpec, ...] = (
    SanitizerSpec("blank_user_turns", _blank_user_turns, 10),
    SanitizerSpec("images", _images, 20),
    SanitizerSpec("thinking_signatures", _thinking_signatures, 30),
    SanitizerSpec("drop_reasoning_from_history", _drop_reasoning, 40),
    SanitizerSpec("drop_thinking_blocks", _drop_thinking, 45),
    SanitizerSpec("tool_call_inputs", _tool_call_inputs, 50),
    SanitizerSpec("tool_use_result_pairing", _pairing, 60),
    SanitizerSpec("tool_result_details", _tool_result_details, 70),
    SanitizerSpec("stale_assistant_usage", _stale_usage, 80),
    SanitizerSpec("google_turn_ordering", _google_turn_ordering, 90),
)


def has_declared_types(policy: TranscriptPolicy) -> bool:
    """Whether ``policy`` is a plain ``TranscriptPolicy`` whose fields the stages read before
    looking at the messages have their declared types: then no built-in stage raises on it,
    and what a stage does to a message is decided by the message and the policy's switches
    only (the claims of ``is_plain_user_turn`` and ``transcript.clean_turns`` rest on it)."""
    limit = policy.image_max_bytes
    return (
        type(policy) is TranscriptPolicy  # no subclass overriding ``wants``
        and isinstance(policy.api, str)
        and isinstance(policy.provider, str)
        and isinstance(policy.enabled, frozenset)
        and isinstance(policy.disabled, frozenset)
        and (limit is None or isinstance(limit, int))
        and (policy.allowed_tool_names is None or isinstance(policy.allowed_tool_names, frozenset))
    )


def is_plain_user_message(message: Any) -> bool:
    """A user message of non-blank text only (a string, or text blocks each with something
    to say): no blank text to fill or drop and no image, so every built-in stage leaves it as
    it is wherever it stands, except first in a history that must start otherwise (none
    must: the Google ordering only ever adds a user turn before an assistant one)."""
    if role_of(message) != "user":
        return False
    content = wget(message, "content")
    if isinstance(content, str):
        return bool(content.strip())
    return isinstance(content, list) and bool(content) and all(map(is_clean_text_block, content))


def is_plain_user_turn(messages: Sequence[Any], policy: TranscriptPolicy) -> bool:
    """Whether ``messages`` is one user message of non-blank text only (a string, or text
    blocks each with something to say) and ``policy``'s fields have their declared types:
    a fresh session's first request.

    Every built-in stage returns such a history as it is, whatever the policy (forced on or
    not): no blank text to fill or drop, no image, no assistant turn, tool call or result,
    no compaction summary, and a user message first; and none raises (the fields a stage
    reads before looking at the messages are of their types). So the built-in pipeline's
    output is a copy of the list, and the incremental sanitizer need not run it
    (``tests/test_plain_user_turn.py`` holds it against the full pipeline)."""
    if len(messages) != 1 or not has_declared_types(policy):
        return False
    return is_plain_user_message(messages[0])


# --------------------------------------------------------------------------- the runner


def _as_spec(item: Any) -> SanitizerSpec:
    if isinstance(item, SanitizerSpec):
        return item
    if isinstance(item, tuple):
        name, fn, *rest = item
        return SanitizerSpec(name, fn, int(rest[0]) if rest else 100)
    # A registry ``Registration``: name, component, order, plugin.
    return SanitizerSpec(item.name, item.component, int(item.order), getattr(item, "plugin", None))


def _same_messages(before: Sequence[Any], after: Sequence[Any]) -> bool:
    return len(before) == len(after) and all(a is b for a, b in zip(before, after, strict=True))


def run_transcript_sanitizers(
    messages: Sequence[Any],
    policy: TranscriptPolicy,
    sanitizers: Iterable[Any],
    *,
    on_error: OnError | None = None,
    max_passes: int = 4,
) -> list[Any]:
    """Run sanitizers in ``(order, name)`` order, pass after pass, until nothing changes.

    :param sanitizers: :class:`SanitizerSpec`, ``(name, fn[, order])`` tuples, or registry
        registrations (``runtime.components.transcript_sanitizers.ordered()``).
    :param on_error: ``on_error(name, plugin, exc)`` for a sanitizer that raised or returned
        something that is not a list of messages; that stage is skipped (its input passes
        through). Without it the exception propagates.
    :param max_passes: upper bound on pipeline passes (1 = a single OpenClaw pass).
    """
    specs = sorted((_as_spec(item) for item in sanitizers), key=lambda s: (s.order, s.name))
    specs = [spec for spec in specs if spec.name not in policy.disabled]
    failed: set[str] = set()
    current = list(messages)
    for _ in range(max(1, max_passes)):
        start = current
        for spec in specs:
            if spec.name in failed:
                continue
            try:
                result = spec.fn(list(current), policy)
                if not isinstance(result, list | tuple):
                    raise TypeError(
                        f"sanitizer {spec.name!r} returned {type(result).__name__}, expected a list"
                    )
            except Exception as exc:
                if on_error is None:
                    raise
                failed.add(spec.name)
                on_error(spec.name, spec.plugin, exc)
                continue
            current = list(result)
        if _same_messages(start, current):
            break
    return current


def sanitize_session_history(
    messages: Sequence[Any],
    policy: TranscriptPolicy,
    *,
    extra: Iterable[Any] = (),
    on_error: OnError | None = None,
) -> list[Any]:
    """The built-in pipeline (plus ``extra`` sanitizers) over ``messages``."""
    return run_transcript_sanitizers(
        messages, policy, (*BUILTIN_SANITIZERS, *extra), on_error=on_error
    )


def guard_transcript_sanitizer(
    fn: Sanitizer, *, guard: PluginGuard, plugin: str | None, name: str
) -> Sanitizer:
    """``fn`` behind the plugin guard: while quarantined it passes its input through.

    Its exceptions still reach the pipeline's ``on_error`` (which records the fault and skips
    the stage); a call that returns counts as a success for the breaker.
    """
    unit = component_unit("transcript_sanitizer", name)

    def guarded(messages: list[Any], policy: TranscriptPolicy) -> Sequence[Any]:
        if not guard.admits(plugin, unit):
            return messages
        result = fn(messages, policy)
        guard.succeeded(plugin, unit)
        return result

    guarded.__wrapped__ = fn  # type: ignore[attr-defined]
    return guarded
