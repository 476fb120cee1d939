"""The store loader's fast path in ``transcript.repair.plan_session_repair`` (``_untouched``)
gives the same plan as the full per-entry rules, on every shape of entry and file."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from openclaw_runtime.transcript import repair
from openclaw_runtime.transcript.jsonl import parse_session_bytes
from openclaw_runtime.transcript.repair import RepairPlan, plan_session_repair

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "t", "cwd": "/w"}

BLOCKS: list[Any] = [
    {"type": "text", "text": "hi"},
    {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"p": 1}},
    {"type": "weird", "x": 1},
    {"type": ""},
    {"type": 5},
    {"type": None},
    {"type": ["text"]},
    {"text": "no type"},
    ["a", "list"],
    "a string",
    None,
    7,
]
CONTENTS: list[Any] = ["plain", "", None, 3, {"type": "text"}, [], *([b] for b in BLOCKS)]
CONTENTS += [[BLOCKS[0], BLOCKS[1]], [BLOCKS[0], BLOCKS[3]], [BLOCKS[8], BLOCKS[0]]]
KINDS = ["message", "custom_message", "leaf", "model_change", "compaction", "label"]
ROLES = ["user", "assistant", "toolResult", "custom", "zzz"]


def _entry(rng: random.Random, index: int, ids: list[str]) -> dict[str, Any]:
    kind = rng.choice(KINDS)
    # now and then an id reused from an earlier entry
    entry_id = rng.choice(ids) if rng.random() < 0.08 and ids else f"e{index}"
    links: list[Any] = [None, None, f"e{index}", f"e{index + 3}", "gone", *ids[-3:]]
    entry: dict[str, Any] = {"type": kind, "id": entry_id, "parentId": rng.choice(links)}
    if kind == "message":
        message: dict[str, Any] = {"role": rng.choice(ROLES)}
        if rng.random() < 0.9:
            message["content"] = rng.choice(CONTENTS)
        if message["role"] == "assistant" and rng.random() < 0.3:
            message["stopReason"] = "error"
        entry["message"] = message
    elif kind == "custom_message":
        if rng.random() < 0.9:
            entry["content"] = rng.choice(CONTENTS)
        entry["customType"] = "note"
    elif kind == "leaf":
        entry["targetId"] = rng.choice(links)
    elif kind == "compaction":
        entry["summary"] = "s"
        entry["content"] = rng.choice(CONTENTS)  # not a content holder: never set aside
    if rng.random() < 0.05:
        entry["appendMode"] = "side"
    return entry


def _file(entries: list[dict[str, Any]]) -> bytes:
    lines = [json.dumps(HEADER), *(json.dumps(e) for e in entries)]
    return ("\n".join(lines) + "\n").encode()


def _plans(data: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[RepairPlan, RepairPlan]:
    fast = plan_session_repair(parse_session_bytes(data), as_written=True)
    with monkeypatch.context() as patched:
        patched.setattr(repair, "_untouched", lambda *_: False)
        full = plan_session_repair(parse_session_bytes(data), as_written=True)
    return fast, full


def _same(fast: RepairPlan, full: RepairPlan) -> None:
    assert fast.entries == full.entries
    assert fast.changed == full.changed
    assert fast.spans == full.spans
    assert fast.invalid == full.invalid
    assert fast.set_aside_blocks == full.set_aside_blocks
    assert fast.needed == full.needed


@pytest.mark.parametrize("seed", range(40))
def test_random_files_plan_the_same(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    entries: list[dict[str, Any]] = []
    for index in range(rng.randint(1, 60)):
        entries.append(_entry(rng, index, [e["id"] for e in entries]))
    _same(*_plans(_file(entries), monkeypatch))


@pytest.mark.parametrize("content", CONTENTS, ids=repr)
@pytest.mark.parametrize("kind", ["message", "custom_message"])
def test_every_content_shape_plans_the_same(
    kind: str, content: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first: dict[str, Any] = {"type": "message", "id": "a", "parentId": None}
    first["message"] = {"role": "user", "content": "hi"}
    entry: dict[str, Any] = {"type": kind, "id": "b", "parentId": "a"}
    if kind == "message":
        entry["message"] = {"role": "assistant", "content": content}
    else:
        entry["content"] = content
    fast, full = _plans(_file([first, entry]), monkeypatch)
    _same(fast, full)


@pytest.mark.parametrize(
    ("parent", "second_id", "target"),
    [
        (None, "b", None),
        ("a", "b", None),
        ("b", "b", None),  # links to itself
        ("c", "b", None),  # links to a later entry
        ("gone", "b", None),  # to a missing entry: left to the tree
        ("a", "a", None),  # reuses an id
        ("a", "b", "c"),  # a leaf whose target is later
        ("a", "b", "a"),
    ],
)
def test_links_plan_the_same(
    parent: str | None, second_id: str, target: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = {"type": "message", "id": "a", "parentId": None, "message": {"role": "user"}}
    second: dict[str, Any] = {"type": "message", "id": second_id, "parentId": parent}
    second["message"] = {"role": "user", "content": "x"}
    leaf = {"type": "leaf", "id": "l", "parentId": "b", "targetId": target}
    third = {"type": "message", "id": "c", "parentId": "b", "message": {"role": "user"}}
    fast, full = _plans(_file([first, second, leaf, third]), monkeypatch)
    _same(fast, full)


def test_the_fast_path_takes_the_lines_the_store_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The shapes a session written by the runtime holds all take the fast path."""
    calls: list[str] = []
    real = repair._broken_link

    def counted(entry: dict[str, Any], *args: Any) -> str | None:
        calls.append(entry["id"])
        return real(entry, *args)

    monkeypatch.setattr(repair, "_broken_link", counted)
    entries: list[dict[str, Any]] = [
        {"type": "message", "id": "a", "parentId": None, "message": {"role": "user"}},
        {"type": "model_change", "id": "b", "parentId": "a", "provider": "p", "modelId": "m"},
        {"type": "message", "id": "c", "parentId": "b", "message": {"role": "assistant"}},
        {"type": "custom_message", "id": "d", "parentId": "c", "content": [BLOCKS[0]]},
    ]
    entries[0]["message"]["content"] = "hi"
    entries[2]["message"]["content"] = [BLOCKS[0], BLOCKS[1]]
    plan = plan_session_repair(parse_session_bytes(_file(entries)), as_written=True)
    assert plan.entries == entries and not plan.needed
    assert calls == []
