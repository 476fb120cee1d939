"""The ``pytest11`` plugin: its fixtures, and that it is what pytest loaded from the entry point.

``openclaw_runtime_fake`` must take the whole pipeline: a plugin's sanitizer rewrites what
the model sees, the built-in repairer turns a plain-text call into a tool run, the configured
context engine assembles the context, and the session lands in ``openclaw_state_dir``.
"""

from __future__ import annotations

import importlib.metadata
import json
from typing import Any, ClassVar

import httpx
import pytest

from openclaw_runtime import hookimpl, tool
from openclaw_runtime.context.legacy import LegacyContextEngine
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.testing import FakeRuntime, Fault, pytest_plugin

pytestmark = pytest.mark.anyio


def test_the_plugin_is_loaded_from_its_entry_point(pytestconfig):
    (entry,) = [
        e for e in importlib.metadata.entry_points(group="pytest11") if e.name == "openclaw_runtime"
    ]
    assert entry.value == "openclaw_runtime.testing.pytest_plugin"
    assert pytestconfig.pluginmanager.get_plugin("openclaw_runtime") is pytest_plugin


def test_the_state_dir_is_fresh_and_empty(openclaw_state_dir, tmp_path):
    assert openclaw_state_dir.is_dir() and not any(openclaw_state_dir.iterdir())
    assert openclaw_state_dir.parent == tmp_path


@tool
async def lookup(query: str) -> str:
    """Look something up."""
    return f"result for {query}"


class Shouting:
    """A transcript sanitizer: user text in capitals (deterministic and idempotent)."""

    @staticmethod
    def shout(messages: list[Any], policy: Any) -> list[Any]:
        return [
            UserMessage(content=m.text().upper(), timestamp=m.timestamp)
            if isinstance(m, UserMessage)
            else m
            for m in messages
        ]

    @hookimpl
    def register_transcript_sanitizers(self, register: Any) -> None:
        register("shout", self.shout)


class RecordingEngine(LegacyContextEngine):
    assembled: ClassVar[list[int]] = []

    async def assemble(self, params: Any) -> Any:
        RecordingEngine.assembled.append(len(params.messages))
        return await super().assemble(params)


class Engines:
    @hookimpl
    def register_context_engines(self, register: Any) -> None:
        register("recording", RecordingEngine)


async def test_the_fake_runtime_takes_the_whole_pipeline(openclaw_runtime_fake, openclaw_state_dir):
    fake: FakeRuntime = openclaw_runtime_fake
    RecordingEngine.assembled = []
    fake.add_plugin(Shouting(), name="shouting")
    fake.add_plugin(Engines(), name="engines")
    fake.config["context_engine"] = "recording"
    fake.provider.reply('{"name": "lookup", "arguments": {"query": "otters"}}')
    fake.provider.reply("Otters hold hands while sleeping.")

    result = await fake.run("tell me about otters", session_id="s1", tools=[lookup])

    assert result.ok and result.payloads[-1].text == "Otters hold hands while sleeping."
    first, second = fake.provider.history
    # the sanitizer ran on what the model saw
    assert first.context.messages[0].text() == "TELL ME ABOUT OTTERS"
    # the repairer promoted the text to a call, the tool ran, its result went back
    assert second.context.messages[-1].role == "toolResult"
    assert second.context.messages[-1].text() == "result for otters"
    # the configured engine assembled the (empty) history of the run, then a follow-up's
    assert RecordingEngine.assembled == [0]
    fake.provider.reply("You're welcome.")
    await fake.run("thanks", session_id="s1")
    assert RecordingEngine.assembled == [0, 4]
    # and the session is in the state dir
    lines = (openclaw_state_dir / "sessions" / "s1.jsonl").read_text().splitlines()
    assert any('"toolResult"' in line for line in lines)


async def test_plugins_are_added_before_the_runtime_is_built(openclaw_runtime_fake):
    openclaw_runtime_fake.provider.reply("hi")
    await openclaw_runtime_fake.run("hello")
    with pytest.raises(RuntimeError, match="add plugins before the first run"):
        openclaw_runtime_fake.add_plugin(Shouting())


async def test_the_fault_server_serves_faults_on_loopback(fault_server):
    assert fault_server.base_url.startswith("http://127.0.0.1:")
    fault_server.inject(Fault("rate_limit"))
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    async with httpx.AsyncClient(base_url=fault_server.base_url) as client:
        limited = await client.post("/chat/completions", json=body)
        answered = await client.post("/chat/completions", json=body)
    assert limited.status_code == 429
    assert answered.status_code == 200
    assert json.loads(answered.text)["choices"][0]["message"]["content"] == "You said: hi"
    assert [r.outcome for r in fault_server.requests] == ["rate_limit", "ok"]
