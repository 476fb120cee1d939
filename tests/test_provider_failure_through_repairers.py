"""A provider whose event stream raises mid-stream: its own error reaches the run.

Providers usually return an ``AssistantMessageEventStream`` over an async generator. When that
generator raises, the stream just ends for whoever iterates it (``result()`` raises the
error), so the stream-repair layers above it saw a normal end and the run reported "event
stream ended without a completion event" instead of the provider's message. The repair chain
now passes the provider's failure on, and no repairer plugin is blamed for it.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime import Runtime, hookimpl
from openclaw_runtime.containment import PluginGuard
from openclaw_runtime.events import AssistantMessageEventStream, Start, TextDelta, TextStart
from openclaw_runtime.llm import Context, StreamOptions
from openclaw_runtime.messages import AssistantMessage, TextContent
from openclaw_runtime.repair import PlainTextToolCallRepairer, apply_stream_repairers
from openclaw_runtime.repair.compose import guard_stream_repairer
from openclaw_runtime.testing import fake_model

pytestmark = pytest.mark.anyio

MESSAGE = "upstream went away: connection reset by peer"


class UpstreamGone(RuntimeError):
    pass


def failing_stream(model: Any, context: Any, options: Any) -> AssistantMessageEventStream:
    """Streams ``Hel`` and then raises, as a provider's generator does when its socket dies."""

    async def events() -> AsyncIterator[Any]:
        partial = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
        yield Start(partial)
        partial.content.append(TextContent(text=""))
        yield TextStart(0, partial)
        partial.content[0].text += "Hel"  # type: ignore[union-attr]
        yield TextDelta(0, "Hel", partial)
        raise UpstreamGone(MESSAGE)

    return AssistantMessageEventStream(events())


async def passthrough(events: AsyncIterator[Any], context: Context) -> AsyncIterator[Any]:
    async for event in events:
        yield event


def _plain() -> PlainTextToolCallRepairer:
    ids = itertools.count()
    return PlainTextToolCallRepairer(tool_call_id=lambda: f"id{next(ids)}")


CHAINS = {
    "a plain repairer": lambda guard: [passthrough],
    "the built-in repairer": lambda guard: [_plain()],
    "a guarded plugin repairer": lambda guard: [
        guard_stream_repairer(passthrough, guard=guard, plugin="p", name="pass")
    ],
    "guarded built-in then plugin": lambda guard: [
        guard_stream_repairer(_plain(), guard=guard, plugin="p", name="plain"),
        guard_stream_repairer(passthrough, guard=guard, plugin="q", name="pass"),
    ],
}


@pytest.mark.parametrize("chain", list(CHAINS))
async def test_the_providers_error_comes_out_of_the_repair_chain(chain: str) -> None:
    guard = PluginGuard()
    stream_fn = apply_stream_repairers(failing_stream, CHAINS[chain](guard))
    response = stream_fn(fake_model(), Context(), StreamOptions())
    seen = []
    with anyio.fail_after(10):
        async for event in response:
            seen.append(event.type)
        with pytest.raises(UpstreamGone, match="connection reset"):
            await response.result()
    assert seen == ["start", "text_start", "text_delta"]
    # the failure was the provider's: no repairer is faulted for it
    assert guard.quarantines() == []
    for plugin, unit in (("p", "stream_repairer:pass"), ("p", "stream_repairer:plain")):
        assert guard.state(plugin, unit).faults == ()


def _runtime(state_dir: Path) -> Runtime:
    class FailingProvider:
        @hookimpl
        def register_providers(self, register: Any) -> None:
            register("failing", failing_stream)

    config = {
        "state_dir": str(state_dir),
        "models": [{"id": "m1", "api": "failing", "provider": "acme"}],
    }
    return Runtime(config, plugins=[("failing", FailingProvider())], load_entrypoints=False, env={})


async def test_a_run_reports_the_providers_own_error_and_keeps_the_partial(
    tmp_path: Path,
) -> None:
    async with _runtime(tmp_path) as runtime:
        with anyio.fail_after(30):
            result = await runtime.run("hi", session_id="s1", model="acme/m1")
    assert not result.ok
    assert result.error is not None and result.error.message == MESSAGE
    last = result.messages[-1]
    assert last.role == "assistant" and last.stop_reason == "error"
    assert last.error_message == MESSAGE
    assert [block.text for block in last.content] == ["Hel"]  # type: ignore[union-attr]
