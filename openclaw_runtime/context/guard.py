"""The tool-result context guard: the orchestrator's hook into the kernel's ``transform_context``.

``install_tool_result_context_guard`` wraps a ``transform_context`` (composing with the one
already there) so that before every model request:

1. every tool result heavier than half the context window (in weighted characters) is
   truncated on the *outgoing* list — the transcript keeps the full result and its
   ``details``; the model sees a bounded copy without ``details``;
2. when the mid-turn precheck is enabled and a tool result arrived after the fence (the
   message count seen at the previous request), the next request is routed with
   ``should_preemptively_compact_before_prompt``; any route but ``fits`` raises
   ``MidTurnPrecheckSignal`` to hand control back to the orchestrator.

The kernel turns any exception from ``transform_context`` into a failed turn whose assistant
message has ``stop_reason="error"`` and ``error_message == MID_TURN_PRECHECK_ERROR_MESSAGE``.
The orchestrator recognises that text with ``is_mid_turn_precheck_error_message`` and reads
the numbers from ``guard.last_signal.request`` (or from the ``on_mid_turn_precheck`` callback).
"""

from __future__ import annotations

import inspect
import itertools
import json
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, TypeAlias

from .._exceptions import OpenClawRuntimeError
from .._prefix import shared_prefix_length, starts_with
from ..abort import AbortSignal
from ..messages import ImageContent, TextContent, ToolResultMessage
from .limits import (
    IMAGE_CHAR_ESTIMATE,
    TOOL_RESULT_CHARS_PER_TOKEN_ESTIMATE,
    resolve_tool_result_context_max_chars,
)
from .preemptive import (
    PreemptiveCompactionDecision,
    prompt_fits_budget,
    should_preemptively_compact_before_prompt,
)
from .projection import ToolResultProjectionState
from .tokens import (
    CHARS_PER_TOKEN_ESTIMATE,
    TokenEstimator,
    boundary_token_pressure,
    estimate_message_token_pressure,
    estimate_new_message_token_pressure,
)
from .truncation import (
    format_context_limit_truncation_notice,
    truncate_tool_result_message,
    truncate_tool_result_text,
)

__all__ = [
    "MID_TURN_PRECHECK_ERROR_MESSAGE",
    "MidTurnPrecheckOptions",
    "MidTurnPrecheckRequest",
    "MidTurnPrecheckRoute",
    "MidTurnPrecheckSignal",
    "ProjectionMemo",
    "ToolResultContextGuard",
    "enforce_tool_result_limit",
    "estimate_tool_result_context_chars",
    "install_tool_result_context_guard",
    "is_mid_turn_precheck_error_message",
    "is_mid_turn_precheck_signal",
    "truncate_tool_result_to_chars",
]

MidTurnPrecheckRoute: TypeAlias = Literal[
    "compact_only", "truncate_tool_results_only", "compact_then_truncate"
]

#: The error text of a turn stopped by the mid-turn precheck (a "Context overflow:" message,
#: so failover classification treats it as context overflow).
MID_TURN_PRECHECK_ERROR_MESSAGE = (
    "Context overflow: prompt too large for the model (mid-turn precheck)."
)

#: What one image costs in the guard's weighted characters.
_TOOL_IMAGE_CHARS = IMAGE_CHAR_ESTIMATE * TOOL_RESULT_CHARS_PER_TOKEN_ESTIMATE
_UNSERIALIZABLE_BLOCK_CHARS = 256


# --------------------------------------------------------------------------- the signal


@dataclass(frozen=True, slots=True)
class MidTurnPrecheckRequest:
    """The token pressure that stopped a tool loop, handed to the orchestrator's recovery."""

    route: MidTurnPrecheckRoute
    estimated_prompt_tokens: int
    prompt_budget_before_reserve: int
    overflow_tokens: int
    tool_result_reducible_chars: int
    effective_reserve_tokens: int

    @classmethod
    def from_decision(cls, decision: PreemptiveCompactionDecision) -> MidTurnPrecheckRequest | None:
        """The request for a routing decision; None when the prompt fits."""
        if decision.route == "fits":
            return None
        return cls(
            route=decision.route,
            estimated_prompt_tokens=decision.estimated_prompt_tokens,
            prompt_budget_before_reserve=decision.prompt_budget_before_reserve,
            overflow_tokens=decision.overflow_tokens,
            tool_result_reducible_chars=decision.tool_result_reducible_chars,
            effective_reserve_tokens=decision.effective_reserve_tokens,
        )

    def to_dict(self) -> dict[str, Any]:
        """OpenClaw's camelCase shape."""
        return {
            "route": self.route,
            "estimatedPromptTokens": self.estimated_prompt_tokens,
            "promptBudgetBeforeReserve": self.prompt_budget_before_reserve,
            "overflowTokens": self.overflow_tokens,
            "toolResultReducibleChars": self.tool_result_reducible_chars,
            "effectiveReserveTokens": self.effective_reserve_tokens,
        }


class MidTurnPrecheckSignal(OpenClawRuntimeError):
    """Control flow, not a failure: the next request would overflow; recover, then retry.

    ``str(signal)`` is exactly ``MID_TURN_PRECHECK_ERROR_MESSAGE``, which is what the kernel
    records as the failed turn's ``error_message``. ``request`` carries route and numbers.
    """

    #: Marks control-flow signals (OpenClaw's ``agent-core.controlFlowError`` sentinel).
    is_control_flow_signal: ClassVar[bool] = True

    def __init__(self, request: MidTurnPrecheckRequest) -> None:
        super().__init__(MID_TURN_PRECHECK_ERROR_MESSAGE)
        self.request = request

    @property
    def route(self) -> MidTurnPrecheckRoute:
        """The recovery the precheck asks for."""
        return self.request.route


def is_mid_turn_precheck_signal(error: object) -> bool:
    """True for a ``MidTurnPrecheckSignal``."""
    return isinstance(error, MidTurnPrecheckSignal)


def is_mid_turn_precheck_error_message(text: object) -> bool:
    """True when a failed turn's ``error_message`` came from the mid-turn precheck."""
    return isinstance(text, str) and text.strip() == MID_TURN_PRECHECK_ERROR_MESSAGE


@dataclass(slots=True)
class MidTurnPrecheckOptions:
    """When and how the guard checks token pressure inside a tool loop.

    ``reserve_tokens`` may be a number or a callable read at each check (the reserve can change
    when the model does). ``get_pre_prompt_message_count`` seeds the fence so the very first
    request after a tool call is checked even if the guard never saw an earlier request.
    """

    context_token_budget: int
    reserve_tokens: int | Callable[[], int]
    enabled: bool = True
    tool_result_max_chars: int | None = None
    get_system_prompt: Callable[[], str | None] | None = None
    get_pre_prompt_message_count: Callable[[], int] | None = None
    on_mid_turn_precheck: Callable[[MidTurnPrecheckRequest], None] | None = None

    def resolve_reserve_tokens(self) -> int:
        """The reserve for this check."""
        reserve = self.reserve_tokens
        return reserve() if callable(reserve) else reserve


# --------------------------------------------------------------------------- per-result limit


def estimate_tool_result_context_chars(message: Any) -> int:
    """The guard's weight of a tool result: visible content at two characters per token.

    Text counts its length, an image 8000, any other block its JSON length; the sum is
    doubled. ``details`` never reaches a provider and is not counted. Other messages weigh 0.
    """
    if not isinstance(message, ToolResultMessage):
        return 0
    chars = 0
    for block in message.content:
        if isinstance(block, TextContent):
            chars += len(block.text)
        elif isinstance(block, ImageContent):
            chars += IMAGE_CHAR_ESTIMATE
        else:
            chars += _json_length(block)
    weighted = math.ceil(chars * (CHARS_PER_TOKEN_ESTIMATE / TOOL_RESULT_CHARS_PER_TOKEN_ESTIMATE))
    return max(chars, weighted)


def truncate_tool_result_to_chars(message: Any, max_chars: int) -> Any:
    """A copy of a tool result that weighs at most ``max_chars``; other messages unchanged.

    Images are kept while they fit (most first); text is truncated with head+tail preserved
    and no minimum head; dropped images are announced in a text notice. The copy has no
    ``details``. A result that already fits is returned as it is.
    """
    if not isinstance(message, ToolResultMessage):
        return message
    if estimate_tool_result_context_chars(message) <= max_chars:
        return message
    content = list(message.content)
    image_count = sum(isinstance(block, ImageContent) for block in content)
    most_images = min(image_count, max(0, max_chars) // _TOOL_IMAGE_CHARS)
    for retained in range(most_images, -1, -1):
        kept = _keep_first_images(content, retained)
        notice = _image_omission_notice(image_count, retained) if retained < image_count else None
        projected = _project_within(message, kept, notice, max_chars)
        if projected is not None:
            return projected
    return _text_only_projection(message, image_count, max_chars)


def enforce_tool_result_limit(
    messages: Sequence[Any], max_single_tool_result_chars: int
) -> list[Any]:
    """A new list in which every tool result weighs at most the limit (others untouched)."""
    return [truncate_tool_result_to_chars(m, max_single_tool_result_chars) for m in messages]


def _project_within(
    message: ToolResultMessage, kept: list[Any], notice: str | None, max_chars: int
) -> ToolResultMessage | None:
    """Truncate the text of ``kept`` into what the other blocks leave; None if it cannot fit."""
    notice_blocks = [TextContent(text=notice)] if notice is not None else []
    others = [block for block in kept if not isinstance(block, TextContent)]
    reserved = estimate_tool_result_context_chars(_with_content(message, others + notice_blocks))
    available = max_chars - reserved
    if available < 0:
        return None
    text_budget = available // TOOL_RESULT_CHARS_PER_TOKEN_ESTIMATE
    bounded = truncate_tool_result_message(
        _with_content(message, kept), text_budget, min_keep_chars=0
    )
    for before, after in zip(kept, bounded.content, strict=True):
        if isinstance(before, TextContent) and before.text and not after.text:
            return None
    projected = _with_content(message, [*bounded.content, *notice_blocks])
    if estimate_tool_result_context_chars(projected) <= max_chars:
        return projected
    return None


def _text_only_projection(
    message: ToolResultMessage, image_count: int, max_chars: int
) -> ToolResultMessage:
    """Last resort: one text block (image notice + joined text) cut to the budget."""
    raw_text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
    if image_count:
        notice = _image_omission_notice(image_count, 0)
        raw_text = notice + (f"\n\n{raw_text}" if raw_text else "")
    if not raw_text:
        overflow = max(estimate_tool_result_context_chars(message) - max_chars, 1)
        omitted = max(1, overflow // TOOL_RESULT_CHARS_PER_TOKEN_ESTIMATE)
        return _with_content(
            message, [TextContent(text=format_context_limit_truncation_notice(omitted))]
        )
    if max_chars <= 0:
        notice_text = format_context_limit_truncation_notice(len(raw_text))
        return _with_content(message, [TextContent(text=notice_text)])
    text = truncate_tool_result_text(
        raw_text, max_chars // TOOL_RESULT_CHARS_PER_TOKEN_ESTIMATE, min_keep_chars=0
    )
    return _with_content(message, [TextContent(text=text)])


def _keep_first_images(content: list[Any], retained: int) -> list[Any]:
    kept, seen = [], 0
    for block in content:
        if isinstance(block, ImageContent):
            seen += 1
            if seen > retained:
                continue
        kept.append(block)
    return kept


def _image_omission_notice(image_count: int, retained: int) -> str:
    omitted = image_count - retained
    plural = "" if omitted == 1 else "s"
    none_fit = "; no images fit the context limit" if retained == 0 else ""
    return f"[{omitted} image{plural} omitted from context{none_fit}; rerun with fewer images]"


def _with_content(message: ToolResultMessage, content: list[Any]) -> ToolResultMessage:
    """A copy with new content and without ``details`` (never sent to a provider)."""
    copy = message.model_copy(update={"content": content, "details": None})
    copy.__pydantic_fields_set__.discard("details")
    return copy


def _json_length(block: Any) -> int:
    try:
        return len(json.dumps(block.to_dict(), ensure_ascii=False, separators=(",", ":")))
    except (TypeError, ValueError):
        return _UNSERIALIZABLE_BLOCK_CHARS


# --------------------------------------------------------------------------- the guard


class _HasTransformContext(Protocol):
    transform_context: Any


TransformContext: TypeAlias = Callable[[list[Any], AbortSignal | None], Any]


_measure = estimate_tool_result_context_chars


class ProjectionMemo:
    """The projections of the messages of the previous request, by message object.

    Projecting a tool result fingerprints it (a JSON dump and a hash), so a request that
    resends a long history would pay for every result again. A message object seen again at
    the same limit gets its earlier projection (projection is a function of the message and
    the limit). Only the latest request's messages are kept. One memo may serve the guards of
    successive attempts of a session, whose history holds the same message objects.

    A request that resends the previous one's messages in the same order and adds some (every
    model call of a tool loop) reuses the previous output list as a whole: only the added
    messages are looked at, so the cost of a call does not grow with the loop. One that
    shares only their leading part (a recent message replaced by a fresh copy) reuses that
    part and looks at the messages from the first other object on.
    """

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Any, int, Any]] = {}
        #: The previous request: its messages, their projections, the limit.
        self._last: tuple[list[Any], list[Any], int] | None = None
        #: What ``keep_only`` was last given (copies), and the keys entered since (``None``:
        #: not known, the entries were rebuilt): when each list kept now starts with the one
        #: kept then (a kept-open session's next turn), only those keys are looked at.
        self._kept: tuple[list[Any], ...] | None = None
        self._entered: list[int] | None = None
        #: The running token sum of the projected messages (the precheck's default
        #: estimator), kept with the projections it was measured on.
        self.tokens = _HistoryTokens()

    def project_all(
        self,
        source: Sequence[Any],
        limit: int,
        project: Callable[[Any], Any],
        changes: type | tuple[type, ...] = object,
    ) -> list[Any]:
        """``[project(m) for m in source]``, reusing the projection of a message seen before.

        ``changes``: the only types ``project`` may change; any other message is its own
        projection without a call (a first request after a restart meets thousands)."""
        last = self._last
        if last is not None and last[2] == limit:
            inputs, outputs, _ = last
            if starts_with(source, inputs):
                return self._extend(source, limit, project, last, changes)  # a loop's request
            kept = shared_prefix_length(inputs, source)
            if kept:
                # the messages the previous request shares with this one keep their
                # projections (all of them in a loop; up to a fresh copy of a recent result
                # after a sanitizer or a plugin's transform replaced it)
                del inputs[kept:]
                del outputs[kept:]
                return self._extend(source, limit, project, last, changes)
        earlier = self._entries
        seen: dict[int, tuple[Any, int, Any]] = {}
        out = []
        for message in source:
            hit = earlier.get(id(message))
            if hit is not None and hit[0] is message and hit[1] == limit:
                projected = hit[2]
            elif not isinstance(message, changes):
                projected = message
            else:
                projected = project(message)
            seen[id(message)] = (message, limit, projected)
            out.append(projected)
        self._entries = seen
        self._entered = None  # every entry is new: the next ``keep_only`` looks at all
        self._last = (list(source), out, limit)
        return list(out)

    def _extend(
        self,
        source: Sequence[Any],
        limit: int,
        project: Callable[[Any], Any],
        last: tuple[list[Any], list[Any], int],
        changes: type | tuple[type, ...] = object,
    ) -> list[Any]:
        """The previous request plus the messages after it (``source`` starts with it); a
        message ``project`` may not change (``changes``) is its own projection, as in
        ``project_all`` (a tool loop's assistant turns)."""
        inputs, outputs, _ = last
        entries = self._entries
        entered = self._entered
        for message in source[len(inputs) :]:
            hit = entries.get(id(message))
            if hit is not None and hit[0] is message and hit[1] == limit:
                projected = hit[2]
            elif not isinstance(message, changes):
                projected = message
            else:
                projected = project(message)
            if hit is None and entered is not None:
                entered.append(id(message))
            entries[id(message)] = (message, limit, projected)
            inputs.append(message)
            outputs.append(projected)
        return list(outputs)

    def clear(self) -> None:
        """Forget every projection."""
        self._entries = {}
        self._last = None
        self._kept = self._entered = None
        self.tokens.keep_leading(())  # the same object: a guard's estimator may hold it

    def kept_outputs(self) -> Sequence[Any]:
        """The projections of the previous request's messages still kept (its leading run
        after ``keep_only``): what a converter kept across attempts may keep too."""
        last = self._last
        return last[1] if last is not None else ()

    def keep_only(self, *keep: Sequence[Any]) -> None:
        """Forget every projection but those of the message objects in ``keep`` (by
        identity), and of the previous request keep only its leading messages that are in
        ``keep``: the next request (a kept session's next turn resends its history first)
        extends that run instead of looking at every message again. Projection is a function
        of the message and the limit, so what is forgotten only costs a projection again,
        never changes one. The token sum keeps the same leading run. A request usually
        starts with the last list of ``keep`` (the runner gives the sanitizer's cached output
        last): its leading objects are kept without a look-up.

        When every list of ``keep`` starts with the one of the previous call (the same
        objects: a kept-open session's next turn), only the keys entered since are looked at,
        against the lists' new messages: the rest was kept then and is still in ``keep``. A
        key entered since for a kept message that had no entry then (one no request had
        sent) is forgotten too, which only costs its projection again."""
        # an entry's key is its message's id and both objects are alive: same id, same object
        entries = self._entries
        kept_before, entered = self._kept, self._entered
        if (
            entered is not None
            and kept_before is not None
            and len(kept_before) == len(keep)
            and all(map(starts_with, keep, kept_before))
        ):
            added: set[int] = set()
            for messages, before in zip(keep, kept_before, strict=True):
                added.update(map(id, messages[len(before) :]))
            for key in entered:
                if key not in added:
                    entries.pop(key, None)
        else:
            wanted: set[int] = set()
            for messages in keep:
                wanted.update(map(id, messages))  # at C speed: an attempt's end on a long history
            for key in entries.keys() - wanted:  # the attempt's own messages: few
                del entries[key]
        self._kept = tuple(map(list, keep))
        self._entered = []
        last, self._last = self._last, None
        if last is not None:
            inputs, outputs, limit = last
            # a request starts with the messages of the last list kept (the sanitizer's
            # cached output): those are kept without a look-up, the rest looked up (every
            # message of the request has an entry, kept if and only if the message is)
            start = shared_prefix_length(inputs, keep[-1]) if keep else 0
            absent = map(operator.not_, map(entries.__contains__, map(id, inputs[start:])))
            kept = start + next(itertools.compress(itertools.count(), absent), len(inputs) - start)
            if kept:
                del inputs[kept:]
                del outputs[kept:]
                self._last = (inputs, outputs, limit)
        self.tokens.keep_leading(self.kept_outputs())


class _HistoryTokens:
    """The default estimator for the mid-turn precheck, with the history's token sum kept
    across the requests of an attempt: a request that resends the previous one's messages
    and adds some only measures what was added; one that shares only their leading part (a
    recent message replaced by a fresh copy) takes the messages after it out of the sum and
    measures its own from there (the sum is the same integer either way: a message's
    estimate is a function of the message, and history messages are not edited in place)."""

    def __init__(self) -> None:
        self._messages: list[Any] | None = None  # made with the first estimate
        self._tokens = 0

    def __call__(
        self, messages: Sequence[Any], *, system_prompt: str | None = None, prompt: str = ""
    ) -> int:
        seen = self._messages
        if seen and starts_with(messages, seen):
            kept = len(seen)  # every earlier message again (a loop's request): the usual case
        else:
            kept = shared_prefix_length(seen, messages) if seen else 0
        if seen is not None and kept and len(seen) - kept <= kept:
            if kept < len(seen):  # fewer to take out than to measure again from the start
                self._tokens -= sum(map(estimate_new_message_token_pressure, seen[kept:]))
                del seen[kept:]
            added = messages[kept:]
            self._tokens += sum(map(estimate_new_message_token_pressure, added))
            seen.extend(added)
        else:
            self._messages = list(messages)
            self._tokens = sum(estimate_message_token_pressure(m) for m in messages)
        return boundary_token_pressure(self._tokens, system_prompt=system_prompt, prompt=prompt)

    def keep_leading(self, messages: Sequence[Any]) -> None:
        """Keep the sum of the leading run of the measured messages that ``messages`` starts
        with (the same objects), forgetting the rest (a kept session's attempt's end)."""
        seen = self._messages
        if not seen:
            return
        kept = shared_prefix_length(seen, messages)
        if kept == len(seen):
            return
        if kept:
            self._tokens -= sum(map(estimate_new_message_token_pressure, seen[kept:]))
            del seen[kept:]
        else:
            self._messages, self._tokens = None, 0


class ToolResultContextGuard:
    """A ``transform_context`` that bounds tool results and runs the mid-turn precheck.

    Callable like any ``transform_context``; ``inner`` (the previously installed transform)
    runs first. ``last_signal`` is the most recent ``MidTurnPrecheckSignal`` raised.
    """

    def __init__(
        self,
        *,
        context_window_tokens: float,
        mid_turn_precheck: MidTurnPrecheckOptions | None = None,
        estimator: TokenEstimator | None = None,
        inner: TransformContext | None = None,
        projection_state: ToolResultProjectionState | None = None,
        memo: ProjectionMemo | None = None,
    ) -> None:
        self.context_window_tokens = max(1, math.floor(context_window_tokens))
        #: How each heavy tool result was projected, so later requests resend the same bytes.
        self.projection_state = (
            projection_state if projection_state is not None else ToolResultProjectionState()
        )
        self.max_single_tool_result_chars = resolve_tool_result_context_max_chars(
            context_window_tokens
        )
        self.mid_turn_precheck = mid_turn_precheck
        self.estimator = estimator
        #: The previous request's projections: a message object sent again (a tool loop
        #: resends the whole history) is not projected again.
        self.memo = memo if memo is not None else ProjectionMemo()
        #: what the precheck measures a request that fits with (the default estimate, kept
        #: up to date across requests, and across attempts with a session's memo) unless an
        #: estimator was given
        self._fits_estimator: TokenEstimator = (
            estimator if estimator is not None else self.memo.tokens
        )
        self.inner = inner
        self.last_signal: MidTurnPrecheckSignal | None = None
        self._last_seen_length: int | None = None
        self._target: _HasTransformContext | None = None

    async def __call__(self, messages: list[Any], signal: AbortSignal | None = None) -> list[Any]:
        source = messages
        if self.inner is not None:
            transformed = self.inner(messages, signal)
            # a list is never awaitable: no ABC check for the usual answer
            if type(transformed) is not list and inspect.isawaitable(transformed):
                transformed = await transformed
            if type(transformed) is list:
                # read only, never kept (the memo keeps its own copy): no copy of the history
                source = transformed
            elif isinstance(transformed, list | tuple):
                source = list(transformed)
        limit = self.max_single_tool_result_chars
        context_messages = self._project_all(source, limit)
        precheck = self.mid_turn_precheck
        if precheck is not None and precheck.enabled:
            self._precheck(precheck, messages, context_messages)
        return context_messages

    def _project_all(self, source: list[Any], limit: int) -> list[Any]:
        state = self.projection_state
        # ``ToolResultProjectionState.project`` hands any other message to
        # ``truncate_tool_result_to_chars``, which returns it as it is; a subclass given as
        # ``projection_state`` sees every message, as before
        changes = ToolResultMessage if type(state) is ToolResultProjectionState else object
        return self.memo.project_all(
            source,
            limit,
            lambda message: state.project(message, limit, truncate_tool_result_to_chars, _measure),
            changes,
        )

    def _precheck(
        self, options: MidTurnPrecheckOptions, raw: list[Any], context_messages: list[Any]
    ) -> None:
        configured = self._last_seen_length
        if configured is None and options.get_pre_prompt_message_count is not None:
            configured = options.get_pre_prompt_message_count()
        fence = _clamp_fence(configured, len(context_messages))
        raw_fence = _clamp_fence(configured, len(raw))
        self._last_seen_length = fence
        if _has_tool_result_after(context_messages, fence) or _has_tool_result_after(
            raw, raw_fence
        ):
            # The post-truncation view is what the next request would send.
            system_prompt = options.get_system_prompt() if options.get_system_prompt else None
            if prompt_fits_budget(
                context_messages,
                context_token_budget=options.context_token_budget,
                reserve_tokens=options.resolve_reserve_tokens(),
                system_prompt=system_prompt,
                estimator=self._fits_estimator,
            ):
                self._last_seen_length = len(context_messages)
                return
            decision = should_preemptively_compact_before_prompt(
                messages=context_messages,
                system_prompt=system_prompt,
                prompt="",  # inside a tool loop the prompt is already in the messages
                context_token_budget=options.context_token_budget,
                reserve_tokens=options.resolve_reserve_tokens(),
                tool_result_max_chars=options.tool_result_max_chars,
                estimator=self.estimator,
            )
            request = MidTurnPrecheckRequest.from_decision(decision)
            if request is not None:
                if options.on_mid_turn_precheck is not None:
                    options.on_mid_turn_precheck(request)
                self.last_signal = MidTurnPrecheckSignal(request)
                raise self.last_signal
        self._last_seen_length = len(context_messages)

    def take_signal(self) -> MidTurnPrecheckSignal | None:
        """The last signal, cleared (so a retried attempt starts clean)."""
        signal, self.last_signal = self.last_signal, None
        return signal

    def reset_fence(self) -> None:
        """Forget the fence, e.g. after the transcript was compacted or rewritten."""
        self._last_seen_length = None
        self.memo.clear()

    def uninstall(self) -> None:
        """Put the wrapped ``transform_context`` back on the target it was installed on."""
        if self._target is not None:
            self._target.transform_context = self.inner
            self._target = None


def install_tool_result_context_guard(
    target: _HasTransformContext,
    *,
    context_window_tokens: float,
    mid_turn_precheck: MidTurnPrecheckOptions | None = None,
    estimator: TokenEstimator | None = None,
    memo: ProjectionMemo | None = None,
) -> ToolResultContextGuard:
    """Wrap ``target.transform_context`` (an ``AgentLoopConfig`` or an ``Agent``) with the guard.

    The existing transform runs first; the guard works on its output. ``memo`` lets the
    guards of successive attempts on one history share their projections. Returns the guard:
    ``guard.uninstall()`` restores the previous transform, ``guard.last_signal`` holds the
    last precheck signal.
    """
    if not hasattr(target, "transform_context"):
        raise TypeError(f"{type(target).__name__} has no transform_context to wrap")
    guard = ToolResultContextGuard(
        context_window_tokens=context_window_tokens,
        mid_turn_precheck=mid_turn_precheck,
        estimator=estimator,
        inner=target.transform_context,
        memo=memo,
    )
    guard._target = target
    target.transform_context = guard
    return guard


def _clamp_fence(configured: int | None, length: int) -> int:
    return max(0, min(length, length if configured is None else configured))


def _has_tool_result_after(messages: Sequence[Any], fence: int) -> bool:
    # a loop, not ``any`` over a generator (per request); from the end: a tool loop's request
    # ends with the result it asks about, after the assistant turn that called for it
    for index in range(len(messages) - 1, fence - 1, -1):
        message = messages[index]
        if type(message) is ToolResultMessage or _is_tool_result(message):
            return True
    return False


def _is_tool_result(message: Any) -> bool:
    if isinstance(message, ToolResultMessage):
        return True
    role = message.get("role") if isinstance(message, dict) else getattr(message, "role", None)
    return role in ("toolResult", "tool")
