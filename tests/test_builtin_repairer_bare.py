"""The core's own stream repairer runs without the plugin guard's layers, with the same output.

``guard_stream_repairers`` leaves a ``builtin.*`` plugin's repairer bare (as the built-in
transcript sanitizers are); a plugin's repairer is still guarded. The table checks that the
built-in plain-text tool-call repairer gives the same events and final message bare as behind
the guard, for plain text, promoted plain-text calls, native calls, thinking, errors, a stream
without ``done`` and a provider that fails — on asyncio and trio.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from openclaw_runtime import Runtime, hookimpl
from openclaw_runtime.containment import PluginGuard
from openclaw_runtime.events import (
    to_jsonable,
)
from openclaw_runtime.llm import Context, StreamOptions, Tool
from openclaw_runtime.messages import ToolCall
from openclaw_runtime.repair import PlainTextToolCallRepairer, apply_stream_repairers
from openclaw_runtime.repair.compose import (
    GuardedToolCallFormat,
    guard_stream_repairer,
    is_builtin_plugin,
)
from openclaw_runtime.testing import fake_model
from tests.stream_support import provider_events

pytestmark = pytest.mark.anyio

CONTEXT = Context(tools=[Tool("read", "read a file"), Tool("write", "write a file")])
READ_A = '[read]\n{"path":"a"}\n[/read]'


class ProviderFailure(RuntimeError):
    pass


STREAMS: dict[str, Any] = {
    "plain text": lambda: provider_events(("text", ["Hello ", "world"])),
    "promoted call": lambda: provider_events(("text", [READ_A[:7], READ_A[7:]])),
    "two promoted calls": lambda: provider_events(("text", [READ_A + "\n" + READ_A])),
    "call then prose": lambda: provider_events(("text", [READ_A, " and then some prose"])),
    "unknown tool": lambda: provider_events(("text", ['[delete]\n{"path":"a"}\n[/delete]'])),
    "native call": lambda: provider_events(
        ("call", ToolCall(id="c1", name="read", arguments={"path": "a"})), reason="toolUse"
    ),
    "thinking and call": lambda: provider_events(("thinking", ["hmm"]), ("text", [READ_A])),
    "error": lambda: provider_events(("text", [READ_A[:5]]), error="boom"),
    "no done": lambda: provider_events(("text", [READ_A]), reason=None),
    "length": lambda: provider_events(("text", [READ_A]), reason="length"),
    "empty": lambda: provider_events(reason="stop"),
}


def _provider(name: str, *, fail_after: int | None = None) -> Any:
    def stream_fn(model: Any, context: Any, options: Any) -> AsyncIterator[Any]:
        async def gen() -> AsyncIterator[Any]:
            for count, event in enumerate(STREAMS[name]()):
                if fail_after is not None and count == fail_after:
                    raise ProviderFailure("provider went away")
                yield event

        return gen()

    return stream_fn


def _untimed(value: Any) -> Any:
    """``value`` without ``timestamp`` fields (each side builds its own messages)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k != "timestamp"}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


async def _consume(stream_fn: Any) -> list[Any]:
    out: list[Any] = []
    response = stream_fn(fake_model(), CONTEXT, StreamOptions())
    try:
        async for event in response:
            out.append(_untimed(to_jsonable(event)))
        out.append(("result", _untimed(to_jsonable(await response.result()))))
    except Exception as exc:
        out.append(("raised", type(exc).__name__, str(exc)))
    finally:
        await response.aclose()
    return out


def _repairer() -> PlainTextToolCallRepairer:
    ids = itertools.count()
    return dataclasses.replace(PlainTextToolCallRepairer(), tool_call_id=lambda: f"id{next(ids)}")


@pytest.mark.parametrize("fail_after", [None, 2])
@pytest.mark.parametrize("name", list(STREAMS))
async def test_the_builtin_gives_the_same_bare_and_guarded(
    name: str, fail_after: int | None
) -> None:
    bare = apply_stream_repairers(_provider(name, fail_after=fail_after), [_repairer()])
    guarded = apply_stream_repairers(
        _provider(name, fail_after=fail_after),
        [guard_stream_repairer(_repairer(), guard=PluginGuard(), plugin="p", name="plain")],
    )
    with anyio.fail_after(10):
        assert await _consume(bare) == await _consume(guarded)


def test_only_the_cores_plugins_count_as_builtin() -> None:
    assert is_builtin_plugin("builtin.repair")
    assert not is_builtin_plugin(None)
    assert not is_builtin_plugin("acme")
    assert not is_builtin_plugin("builtin")  # the prefix is "builtin."


class _PluginRepairer:
    @hookimpl
    def register_stream_repairers(self, register: Any) -> None:
        async def passthrough(events: Any, context: Any) -> AsyncIterator[Any]:
            async for event in events:
                yield event

        register("passthrough", passthrough, order=900)


def test_the_runtime_guards_plugin_repairers_and_not_its_own(tmp_path: Any) -> None:
    runtime = Runtime(
        {"state_dir": str(tmp_path)},
        plugins=[("acme", _PluginRepairer())],
        load_entrypoints=False,
        env={},
    )
    chain = {r.name: r.plugin for r in runtime.components.stream_repairers.ordered()}
    assert chain == {"plain_text_tool_calls": "builtin.repair", "passthrough": "acme"}
    stages = runtime._stream_repairers()
    assert isinstance(stages[0], PlainTextToolCallRepairer)  # bare
    # ... with the registered formats bound, each behind the guard
    assert stages[0].formats
    assert all(isinstance(fmt, GuardedToolCallFormat) for fmt in stages[0].formats)
    assert getattr(stages[1], "__wrapped__", None) is not None  # behind the guard


async def test_the_table_exercises_promotion() -> None:
    bare = apply_stream_repairers(_provider("promoted call"), [_repairer()])
    with anyio.fail_after(10):
        out = await _consume(bare)
    assert [e["type"] for e in out[:-1] if isinstance(e, dict)][-4:] == [
        "toolcall_start",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    assert out[-1][1]["stopReason"] == "toolUse"
