"""``build_session_context`` walks a branch once (the markers and the replayable entries after
the latest compaction together) and converts without a wrapper per entry. Random branches of
every entry kind (compactions with and without a kept entry, excluded and invalid messages,
state markers, unknown kinds) give what the two-pass function it replaces gave: the same
messages (equal, and of the same type), the same markers, the same conversions in the same
order, materialized, as wire dicts, and through ``message_of``."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest

from openclaw_runtime.transcript.session_context import (
    ModelRef,
    SessionContext,
    build_session_context,
    entry_message,
)


def _reference(
    path_entries: Iterable[Mapping[str, Any]],
    *,
    materialize: bool = True,
    message_of: Callable[[Mapping[str, Any]], Any] | None = None,
) -> SessionContext:
    """The function as it was before the one-scan version (verbatim)."""
    entries = list(path_entries)
    thinking_level = "off"
    model: ModelRef | None = None
    tools: list[str] | None = None
    compaction_index = -1
    for index, entry in enumerate(entries):
        kind = entry.get("type")
        if kind == "thinking_level_change":
            thinking_level = entry.get("thinkingLevel") or thinking_level
        elif kind == "model_change":
            model = ModelRef(str(entry.get("provider")), str(entry.get("modelId")))
        elif kind == "message" and entry["message"].get("role") == "assistant":
            message = entry["message"]
            model = ModelRef(str(message.get("provider")), str(message.get("model")))
        elif kind == "active_tools_change":
            names = entry.get("activeToolNames")
            tools = list(names) if isinstance(names, list) else tools
        elif kind == "compaction":
            compaction_index = index

    def convert(entry: Mapping[str, Any]) -> Any:
        if message_of is not None:
            return message_of(entry)
        return entry_message(entry, materialize=materialize)

    messages: list[Any] = []
    replayable = ("message", "custom_message", "branch_summary")
    if compaction_index >= 0:
        compaction = entries[compaction_index]
        messages.append(convert(compaction))
        first_kept = compaction.get("firstKeptEntryId")
        keeping = False
        for entry in entries[:compaction_index]:
            if entry.get("id") == first_kept:
                keeping = True
            if keeping and entry.get("type") in replayable:
                messages.append(convert(entry))
        tail = entries[compaction_index + 1 :]
    else:
        tail = entries
    for entry in tail:
        if entry.get("type") in replayable:
            messages.append(convert(entry))
    return SessionContext([m for m in messages if m is not None], thinking_level, model, tools)


KINDS = [
    *("user", "assistant", "assistant", "tool", "excluded", "invalid", "opaque", "custom"),
    *("branch", "branch_empty", "compaction", "thinking", "model", "tools", "tools_bad"),
    *("label", "unknown"),
]


def _entry(rng: random.Random, index: int, ids: list[str]) -> dict[str, Any]:
    entry_id = f"e{index}"
    base: dict[str, Any] = {"id": entry_id, "timestamp": "2026-12-03T10:00:00.000Z"}
    ids.append(entry_id)
    kind = rng.choice(KINDS)
    if kind == "user":
        return {
            **base,
            "type": "message",
            "message": {"role": "user", "content": f"q{index}", "timestamp": index},
        }
    if kind == "assistant":
        message = {"role": "assistant", "content": [{"type": "text", "text": "a"}], "timestamp": 1}
        if rng.random() < 0.8:
            message |= {"provider": rng.choice(["p1", "p2"]), "model": f"m{index}"}
        return {**base, "type": "message", "message": message}
    if kind == "tool":
        message = {
            "role": "toolResult",
            "toolCallId": f"c{index}",
            "toolName": "read",
            "timestamp": 2,
        }
        return {**base, "type": "message", "message": message}
    if kind == "excluded":
        message = {"role": "user", "content": "x", "excludeFromContext": True, "timestamp": 3}
        return {**base, "type": "message", "message": message}
    if kind == "invalid":
        return {
            **base,
            "type": "message",
            "message": {"role": "user", "content": 5, "timestamp": 4},
        }
    if kind == "opaque":
        return {**base, "type": "message", "message": {"role": "robot", "beep": 1}}
    if kind == "custom":
        return {**base, "type": "custom_message", "customType": "note", "content": "c"}
    if kind == "branch":
        return {**base, "type": "branch_summary", "summary": "s", "fromId": "x"}
    if kind == "branch_empty":
        return {**base, "type": "branch_summary", "summary": ""}
    if kind == "compaction":
        kept = rng.choice([*ids[-6:], "missing", None])
        return {
            **base,
            "type": "compaction",
            "summary": "sum",
            "tokensBefore": rng.choice([10, "bad"]),
            "firstKeptEntryId": kept,
        }
    if kind == "thinking":
        return {**base, "type": "thinking_level_change", "thinkingLevel": rng.choice(["high", ""])}
    if kind == "model":
        return {**base, "type": "model_change", "provider": "p3", "modelId": f"m{index}"}
    if kind == "tools":
        return {**base, "type": "active_tools_change", "activeToolNames": ["read", f"t{index}"]}
    if kind == "tools_bad":
        return {**base, "type": "active_tools_change", "activeToolNames": "read"}
    if kind == "label":
        return {**base, "type": "label", "targetId": ids[0], "label": "l"}
    return {**base, "type": "future_kind"}


def _branch(seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    ids: list[str] = []
    return [_entry(rng, index, ids) for index in range(rng.randrange(0, 40))]


def _same(got: SessionContext, want: SessionContext) -> None:
    assert got == want
    assert [type(m) for m in got.messages] == [type(m) for m in want.messages]


@pytest.mark.parametrize("seed", range(200))
def test_the_one_scan_gives_the_two_pass_context(seed: int) -> None:
    branch = _branch(seed)
    _same(build_session_context(branch), _reference(branch))
    _same(
        build_session_context(branch, materialize=False),
        _reference(branch, materialize=False),
    )
    _same(build_session_context(iter(branch)), _reference(branch))
    calls: list[list[str]] = [[], []]

    def counting(side: int) -> Callable[[Mapping[str, Any]], Any]:
        def message_of(entry: Mapping[str, Any]) -> Any:
            calls[side].append(str(entry.get("id")))
            return entry_message(entry)

        return message_of

    _same(
        build_session_context(branch, message_of=counting(0)),
        _reference(branch, message_of=counting(1)),
    )
    assert calls[0] == calls[1]  # the same entries converted, in the same order


def test_a_message_entry_without_its_message_still_raises() -> None:
    branch = [{"type": "message", "id": "a"}]
    with pytest.raises(KeyError):
        _reference(branch)
    with pytest.raises(KeyError):
        build_session_context(branch)
