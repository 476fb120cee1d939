"""Recording a message: the fast paths give what the plain computations give.

Each recorded message is dumped to its wire dict (``WireModel.to_dict``: the serializer
called directly instead of through ``model_dump``), stamped (``iso_timestamp``: the text up to
the second kept for the last second seen) and joined to the session's cached branch and context
(``SessionReader._record``: both cached lists extended in place). Each table below compares the
fast path with the plain one on many shapes; the last test compares whole transcript lines.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest

from openclaw_runtime.messages import (
    AssistantMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    load_message,
)
from openclaw_runtime.transcript.append import _loadable_message
from openclaw_runtime.transcript.entries import iso_timestamp, iso_timestamp_slow
from openclaw_runtime.transcript.memory import MemorySessionStore
from openclaw_runtime.transcript.session_context import build_session_context, entry_message
from openclaw_runtime.transcript.store import JsonlSessionStore

pytestmark = pytest.mark.anyio

# --------------------------------------------------------------------------- timestamps

_BASE = datetime(2026, 12, 3, 13, 5, 7, 123456, tzinfo=UTC)
_MOMENTS = [
    _BASE,
    _BASE.replace(microsecond=0),
    _BASE.replace(microsecond=999),
    _BASE.replace(microsecond=1000),
    _BASE.replace(microsecond=999999),
    _BASE + timedelta(minutes=1),  # same second of another minute
    _BASE + timedelta(hours=1),  # ... of another hour
    _BASE + timedelta(days=1),  # ... of another day
    _BASE + timedelta(days=31),  # ... of another month
    _BASE.replace(year=2027),  # ... of another year
    _BASE + timedelta(seconds=1),
    _BASE,  # back to a second seen before
    datetime(1, 1, 1, 0, 0, 0, 5000, tzinfo=UTC),
    datetime(999, 6, 1, 1, 2, 3, tzinfo=UTC),  # a year below 1000 is zero-padded
    datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    _BASE.astimezone(timezone(timedelta(hours=5, minutes=30))),  # another zone: converted
    _BASE.astimezone(timezone(timedelta(hours=-8))),
    _BASE.replace(tzinfo=None),  # naive: local time, as astimezone reads it
    datetime(2026, 3, 29, 1, 30, 0, 1, tzinfo=timezone(timedelta(hours=1))),
]


@pytest.mark.parametrize("moment", _MOMENTS, ids=lambda m: m.isoformat())
def test_timestamp_matches_the_plain_format(moment: datetime) -> None:
    assert iso_timestamp(moment) == iso_timestamp_slow(moment)


def test_timestamp_matches_over_a_walk_through_seconds_and_zones() -> None:
    rng = random.Random(13)
    zones = [UTC, timezone(timedelta(hours=2)), timezone(timedelta(hours=-3, minutes=-30))]
    moment = _BASE
    for _ in range(3000):
        moment += timedelta(microseconds=rng.choice([1, 999, 1000, 250_000, 1_000_000, 61e6]))
        shown = moment.astimezone(rng.choice(zones))
        assert iso_timestamp(shown) == iso_timestamp_slow(shown), shown


def test_timestamp_of_now_has_the_javascript_shape() -> None:
    text = iso_timestamp()
    assert len(text) == 24 and text[10] == "T" and text.endswith("Z") and text[19] == "."


# --------------------------------------------------------------------------- wire dicts


def _messages() -> list[Any]:
    usage = Usage(input=3, output=4, total_tokens=7)
    return [
        UserMessage(content="hello"),
        UserMessage(content="hello", timestamp=5),
        UserMessage(
            content=[TextContent(text="look"), ImageContent(data="aGk=", mime_type="image/png")]
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="hmm", thinking_signature="sig"),
                TextContent(text="answer", text_signature=None),
            ],
            api="openai-completions",
            provider="fake",
            model="m1",
            usage=usage,
            stop_reason="stop",
        ),
        AssistantMessage(
            content=[
                ToolCall(id="c1", name="read", arguments={"path": "a", "n": [1, {"x": None}]})
            ],
            api="a",
            provider="p",
            model="m",
            stop_reason="toolUse",
            timestamp=9,
        ),
        AssistantMessage(
            content=[], api="a", provider="p", model="m", stop_reason="error", error_message="x"
        ),
        ToolResultMessage(
            tool_call_id="c1", tool_name="read", content=[TextContent(text="r")], is_error=False
        ),
        ToolResultMessage(
            tool_call_id="c2",
            tool_name="read",
            content=[TextContent(text="bad")],
            is_error=True,
            details={"exit": 2},
        ),
        CustomMessage(custom_type="note", content="remember", display=True),
        load_message({"role": "user", "content": "hi", "extraField": {"kept": True}}),
        load_message(
            {
                "role": "assistant",
                "content": [{"type": "mystery", "payload": 1}, {"type": "text", "text": "t"}],
                "api": "a",
                "provider": "p",
                "model": "m",
                "stopReason": "stop",
                "usage": {"input": 1, "cost": {"total": 0.5}},
                "responseId": None,
            }
        ),
        load_message({"role": "somethingElse", "data": [1, 2]}),
    ]


@pytest.mark.parametrize("message", _messages(), ids=lambda m: type(m).__name__)
def test_to_dict_equals_model_dump(message: Any) -> None:
    fast = message.to_dict()
    slow = message.model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert fast == slow
    assert orjson.dumps(fast) == orjson.dumps(slow)  # same keys in the same order
    content = getattr(message, "content", None)
    blocks = content if isinstance(content, list) else []
    for block in blocks:
        assert block.to_dict() == block.model_dump(mode="json", by_alias=True, exclude_unset=True)


# --------------------------------------------------------------------------- cached context


def _random_message(rng: random.Random, n: int) -> Any:
    kind = rng.randrange(4)
    if kind == 0:
        return UserMessage(content=f"u{n}", timestamp=n)
    if kind == 1:
        return AssistantMessage(
            content=[ToolCall(id=f"c{n}", name="read", arguments={"path": f"f{n}"})],
            api="a",
            provider=rng.choice(["p1", "p2"]),
            model=rng.choice(["m1", "m2"]),
            stop_reason="toolUse",
            timestamp=n,
        )
    if kind == 2:
        return ToolResultMessage(
            tool_call_id=f"c{n}", tool_name="read", content=[TextContent(text=f"r{n}")]
        )
    exclude = rng.random() < 0.5
    return {"role": "user", "content": f"w{n}", "timestamp": n, "excludeFromContext": exclude}


async def _random_step(session: Any, rng: random.Random, n: int) -> None:
    roll = rng.random()
    if roll < 0.6:
        await session.append_message(_random_message(rng, n))
    elif roll < 0.65:
        await session.append_model_change("px", f"mx{n}")
    elif roll < 0.7:
        await session.append_thinking_level_change(rng.choice(["low", "high"]))
    elif roll < 0.74:
        await session.append_active_tools_change([f"t{n}"])
    elif roll < 0.78:
        await session.append_custom_message_entry("note", f"c{n}", display=True)
    elif roll < 0.82:
        await session.append_custom_entry("state", {"n": n})
    elif roll < 0.86:
        await session.append_message(UserMessage(content=f"side{n}"), append_mode="side")
    elif roll < 0.9:
        entries = session.get_entries()
        if entries:
            await session.branch(rng.choice(entries)["id"])
    elif roll < 0.93:
        entries = session.get_entries()
        if entries:
            await session.append_label(rng.choice(entries)["id"], f"l{n}")
    else:
        branch = session.get_branch()
        if len(branch) > 3:
            await session.append_compaction(f"summary {n}", branch[-3]["id"], 100.0)


def _plain(session: Any) -> tuple[Any, ...]:
    """The context built from scratch: the branch walked again, every message parsed again."""
    branch = session.get_path_to_root(session.get_leaf_id())
    context = build_session_context(branch, message_of=entry_message)
    return (
        [m.to_dict() for m in context.messages],
        context.thinking_level,
        context.model,
        context.active_tool_names,
        [entry["id"] for entry in branch],
    )


def _cached(session: Any) -> tuple[Any, ...]:
    context = session.build_session_context()
    return (
        [m.to_dict() for m in context.messages],
        context.thinking_level,
        context.model,
        context.active_tool_names,
        [entry["id"] for entry in session.get_branch()],
    )


@pytest.mark.parametrize("seed", range(12))
async def test_cached_context_equals_the_rebuilt_one_on_random_sessions(
    seed: int, tmp_path: Path
) -> None:
    rng = random.Random(seed)
    if seed % 2:
        store: Any = MemorySessionStore()
    else:
        store = JsonlSessionStore(tmp_path / "sessions")
    session = await store.create(f"s{seed}", cwd="/w")
    extended = 0
    for n in range(120):
        await _random_step(session, rng, n)
        extended += session._context_cache is not None
        if rng.random() < 0.7:  # read often, as a run does, so the caches are live
            assert _cached(session) == _plain(session), n
            # what reads hand out is the caller's: changing it changes nothing cached
            session.get_branch().clear()
            session.build_session_context().messages.append("junk")
            assert _cached(session) == _plain(session), n
    assert extended > 20  # the in-place extension really ran
    await session.aclose()


async def test_a_long_loop_keeps_extending_the_same_cached_lists() -> None:
    session = await MemorySessionStore().create("loop", cwd="/w")
    await session.append_message(UserMessage(content="go"))
    session.build_session_context()
    branch_list = session._branch_cache[1]
    messages_list = session._context_cache[1].messages
    for n in range(50):
        await session.append_message(_random_message(random.Random(n), n))
    assert session._branch_cache[1] is branch_list and len(branch_list) == 51
    assert session._context_cache[1].messages is messages_list
    assert _cached(session) == _plain(session)


# --------------------------------------------------------------------------- whole lines


class _Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 3, 13, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=437_123)
        return self.now


async def test_recorded_lines_equal_the_plainly_encoded_entries(tmp_path: Path) -> None:
    clock = _Clock()
    stamps: list[datetime] = []

    def recorded_clock() -> datetime:
        stamps.append(clock())
        return stamps[-1]

    session = await JsonlSessionStore(tmp_path, now=recorded_clock).create("lines", cwd="/w")
    stamps.clear()  # the header's
    messages = _messages()
    for message in messages:
        await session.append_message(message)
    await session.aclose()
    lines = (tmp_path / "lines.jsonl").read_bytes().splitlines()[1:]
    assert len(lines) == len(messages) == len(stamps)
    parent = None
    for line, message, stamp in zip(lines, messages, stamps, strict=True):
        entry = orjson.loads(line)
        plain = {
            "type": "message",
            "id": entry["id"],
            "parentId": parent,
            "timestamp": iso_timestamp_slow(stamp),
            # as the loader's repair would leave it (an empty error turn gets its placeholder)
            "message": _loadable_message(
                message.model_dump(mode="json", by_alias=True, exclude_unset=True)
            ),
        }
        assert line == orjson.dumps(plain)
        parent = entry["id"]
