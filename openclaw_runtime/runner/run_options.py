"""The keyword options of ``Runtime.run`` as a ``TypedDict`` (``RunOptions``).

``Runtime.run(prompt, **options: Unpack[RunOptions])`` lets mypy and editors check every
option by name and type, while ``RunRequest`` stays the one place that validates values.
The keys are ``RunRequest``'s fields without ``prompt``; a test keeps the two in step.
An option nobody declares is a ``TypeError`` naming it (``reject_unknown_options``), with the
closest known name when there is one.
"""

from __future__ import annotations

import difflib
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any, Literal, TypedDict

from ..abort import AbortSignal
from ..agent.tools import AgentTool
from ..llm import ThinkingLevel
from ..messages import ImageContent
from .reply_payload import ReplyPayload

__all__ = ["RUN_OPTION_NAMES", "RunOptions", "reject_unknown_options", "with_closest_name"]


class RunOptions(TypedDict, total=False):
    """Every keyword ``Runtime.run`` accepts besides the prompt (``RunRequest``'s fields;
    their meaning is in ``RunRequest``'s docstring and docs/runs.md)."""

    session_id: str | None
    session_key: str | None
    model: str | None
    provider: str | None
    fallbacks: Sequence[str] | None
    thinking_level: ThinkingLevel | None
    system_prompt: str | None
    tools: Sequence[AgentTool]
    images: Sequence[ImageContent]
    trigger: str
    input_provenance: Mapping[str, Any] | None
    timeout_s: float | None
    idle_timeout_s: float | None
    auth_profile: str | None
    lock_auth_profile: bool
    lane: str | None
    abort_signal: AbortSignal | None
    run_id: str | None
    messaging_tool_sent_texts: Sequence[str]
    current_message_id: str | None
    max_tokens: int | None
    sender_id: str | None
    sender_is_owner: bool | None
    group_id: str | None
    block_streaming: bool | None
    on_block_reply: Callable[[ReplyPayload], Awaitable[None] | None] | None
    verbose: bool | Literal["off", "on", "full"] | None


RUN_OPTION_NAMES: frozenset[str] = frozenset(RunOptions.__annotations__)


def with_closest_name(name: str, known: Collection[str]) -> str:
    """``'name'``, followed by ``(did you mean 'x'?)`` when a known name is close to it."""
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name)


def reject_unknown_options(where: str, given: Collection[str], known: Collection[str]) -> None:
    """``TypeError`` naming every option of ``given`` that ``known`` lacks (with the closest
    known name when one is close); nothing when every option is known."""
    unknown = sorted(set(given) - set(known))
    if not unknown:
        return
    described = [with_closest_name(name, known) for name in unknown]
    noun = "argument" if len(unknown) == 1 else "arguments"
    raise TypeError(f"{where} got an unexpected keyword {noun} {', '.join(described)}")
