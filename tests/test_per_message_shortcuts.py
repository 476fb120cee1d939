"""Small shortcuts on a tool loop's per-message path, each against what it replaces:
``parse_timestamp_ms`` of a plain integer, the guard's scan for a tool result after the
fence (from the end), and the reader's cached branch and context extended by a batch of
entries whose kinds are mixed (a second handle's appends, taken in one ``_absorb``)."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime
from typing import Any

import pytest

from openclaw_runtime.context import guard
from openclaw_runtime.messages import (
    AssistantMessage,
    OpaqueMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.transcript.entries import parse_timestamp_ms
from openclaw_runtime.transcript.memory import MemorySessionStore
from tests.test_record_fast_paths import _cached, _plain


def _parse_reference(value: Any) -> int | float | None:
    """``parse_timestamp_ms`` before the integer shortcut."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return int(moment.timestamp() * 1000)
    return None


def test_parse_timestamp_ms_equals_the_reference() -> None:
    rng = random.Random(3)
    values: list[Any] = [
        0,
        -1,
        1_733_000_000_000,
        True,
        False,
        None,
        1.5,
        float("nan"),
        float("inf"),
        "2026-12-04T00:00:00.000Z",
        "nope",
        [],
        2**1000 - 1,
        -(2**1000) + 1,
        2**1023,
        -(2**1023),
    ]
    values += [rng.randrange(-(2**64), 2**64) for _ in range(500)]
    for value in values:
        got, want = parse_timestamp_ms(value), _parse_reference(value)
        assert got == want and type(got) is type(want), value
    for huge in (2**1024, -(2**1024), 10**400):  # too large for a float: raises as before
        with pytest.raises(OverflowError):
            _parse_reference(huge)
        with pytest.raises(OverflowError):
            parse_timestamp_ms(huge)


def _message(rng: random.Random, n: int) -> Any:
    roll = rng.randrange(6)
    if roll == 0:
        return UserMessage(content=f"u{n}")
    if roll == 1:
        return AssistantMessage(content=[ToolCall(id=f"c{n}", name="read")])
    if roll == 2:
        return ToolResultMessage(tool_call_id=f"c{n}", tool_name="read", content=[])
    if roll == 3:
        return {"role": rng.choice(["toolResult", "tool", "user", "assistant"])}
    if roll == 4:
        return OpaqueMessage(role=rng.choice(["tool", "toolResult", "other"]))
    return TextContent(text="not a message")


def test_the_tool_result_scan_equals_any_over_the_tail() -> None:
    rng = random.Random(5)
    for _ in range(2_000):
        messages = [_message(rng, n) for n in range(rng.randrange(0, 8))]
        fence = rng.randrange(0, len(messages) + 1)
        want = any(
            type(m) is ToolResultMessage or guard._is_tool_result(m) for m in messages[fence:]
        )
        assert guard._has_tool_result_after(messages, fence) is want
        assert guard._has_tool_result_after(tuple(messages), fence) is want


@pytest.mark.anyio
@pytest.mark.parametrize("seed", range(8))
async def test_a_mixed_batch_from_another_handle_keeps_the_caches_exact(seed: int) -> None:
    """A second handle appends messages and state entries (model, thinking level, tools,
    custom entries) between the first handle's reads: each read takes them in as one batch,
    and its cached context must equal the one rebuilt from the branch."""
    rng = random.Random(seed)
    store = MemorySessionStore()
    first = await store.create("s", cwd="/w")
    second = await store.open("s")
    for n in range(40):
        for _ in range(rng.randrange(1, 5)):
            roll = rng.random()
            if roll < 0.55:
                message = rng.choice(
                    [
                        UserMessage(content=f"u{n}"),
                        AssistantMessage(
                            content=[TextContent(text="t")],
                            provider=rng.choice(["p1", "p2"]),
                            model=rng.choice(["m1", "m2"]),
                        ),
                        ToolResultMessage(tool_call_id="c", tool_name="read", content=[]),
                    ]
                )
                await second.append_message(message)
            elif roll < 0.7:
                await second.append_model_change("px", f"m{n}")
            elif roll < 0.8:
                await second.append_thinking_level_change(rng.choice(["low", "high"]))
            elif roll < 0.9:
                await second.append_active_tools_change([f"t{n}"])
            else:
                await second.append_custom_entry("state", {"n": n})
        await first.refresh()
        assert _cached(first) == _plain(first), n
        await first.append_message(UserMessage(content=f"mine {n}"))
        assert _cached(first) == _plain(first), n
        await second.refresh()
