"""The streamed reply end to end: ``Runtime.run`` and ``openclaw-runtime run`` over real HTTP.

A ``FaultInjectingOpenAIServer`` on 127.0.0.1 streams scripted replies in 3-character SSE
deltas, so every ``<think>``/``</think>`` tag arrives cut across events. Each test checks what
the user got (streamed text deltas, ``RunResult.text``, block replies, CLI stdout) and where
the reasoning went (thinking events, thinking blocks in the transcript).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from openclaw_runtime import Runtime
from openclaw_runtime.agent import tool
from openclaw_runtime.cli import cli
from openclaw_runtime.events import Event
from openclaw_runtime.messages import AssistantMessage, TextContent, ThinkingContent
from openclaw_runtime.runner.payloads import ReplyPayload
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply

pytestmark = pytest.mark.anyio

SECRET_REASONING = "the user seems to want 2+2; secret plan"
TAGGED = f"<think>{SECRET_REASONING}</think>\n\nThe answer is 4."
KEY = "sk-test-reply-stream-key-000001"


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(keys={KEY: "ok"}, chunk_chars=3) as running:
        yield running


def config(tmp_path: Path, server: FaultInjectingOpenAIServer, **reply: Any) -> dict[str, Any]:
    return {
        "state_dir": str(tmp_path / "state"),
        "models": [
            {
                "id": "m1",
                "api": "openai-completions",
                "provider": "srv",
                "baseUrl": server.base_url,
                "contextWindow": 64_000,
                "maxTokens": 1024,
            }
        ],
        "agent": {"model": "srv/m1", "timeout_seconds": 20, "reply": reply},
        "auth": {
            "profiles": [
                {"id": "srv:a", "provider": "srv", "mode": "api_key", "credential": {"value": KEY}}
            ]
        },
    }


def file_entries(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


class Deltas:
    """Text and thinking deltas of a run, in order."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.thinking: list[str] = []
        self.order: list[str] = []

    def __call__(self, event: Event) -> None:
        if event.type != "message_update":
            self.order.append(event.type)
            return
        inner: Any = getattr(event, "assistant_message_event", None)
        if inner.type == "text_delta":
            self.text.append(inner.delta)
        elif inner.type == "thinking_delta":
            self.thinking.append(inner.delta)


async def run_once(tmp_path: Path, server: FaultInjectingOpenAIServer, prompt: str, **kw: Any):
    reply = kw.pop("reply", {})
    async with Runtime(config(tmp_path, server, **reply), load_entrypoints=False) as runtime:
        deltas = Deltas()
        result = await runtime.run(prompt, on_event=deltas, **kw)
        return result, deltas


async def test_think_tags_cut_across_sse_events_never_reach_the_reply(tmp_path, server):
    server.enqueue(Reply(text=TAGGED))
    result, deltas = await run_once(tmp_path, server, "What is 2+2?")
    assert result.ok, result.error
    # the tags really were cut: no single delta the server sent held a whole tag
    assert len(deltas.text) > 3
    assert result.text == "The answer is 4."
    assert "".join(deltas.text) == "The answer is 4."
    assert "".join(deltas.thinking) == SECRET_REASONING
    for payload in result.payloads:
        assert "secret plan" not in (payload.text or "")
    final = result.messages[-1]
    assert isinstance(final, AssistantMessage)
    assert [type(b) for b in final.content] == [ThinkingContent, TextContent]
    assert final.content[0].thinking == SECRET_REASONING  # type: ignore[union-attr]
    # the transcript on disk holds the reasoning as thinking, never as reply text
    stored = [e for e in file_entries(result.session_file) if '"assistant"' in json.dumps(e)]
    blocks = stored[-1]["message"]["content"]
    assert [b["type"] for b in blocks] == ["thinking", "text"]
    assert all(SECRET_REASONING not in b.get("text", "") for b in blocks)


async def test_reasoning_is_not_replayed_to_the_provider_as_text(tmp_path, server):
    server.enqueue(Reply(text=TAGGED))
    async with Runtime(config(tmp_path, server), load_entrypoints=False) as runtime:
        first = await runtime.run("What is 2+2?", session_key="k")
        assert first.ok
        second = await runtime.run("And 3+3?", session_key="k")
        assert second.ok
    body = server.requests[-1].body
    replayed = [m for m in body["messages"] if m.get("role") == "assistant"]
    assert replayed and all(SECRET_REASONING not in json.dumps(m) for m in replayed)
    assert any("The answer is 4." in json.dumps(m) for m in replayed)


async def test_final_tags_mark_the_reply_and_enforce_final_drops_the_rest(tmp_path, server):
    text = "Let me think out loud first.\n<final>Paris is the capital.</final>"
    server.enqueue(Reply(text=text))
    result, _ = await run_once(tmp_path / "a", server, "Capital of France?")
    assert result.text == "Let me think out loud first.\nParis is the capital."
    server.enqueue(Reply(text=text))
    strict, deltas = await run_once(
        tmp_path / "b", server, "Capital of France?", reply={"enforce_final_tag": True}
    )
    assert strict.text == "Paris is the capital."
    assert "".join(deltas.text) == "Paris is the capital."


async def test_block_replies_arrive_paragraph_by_paragraph_in_order(tmp_path, server):
    paragraphs = [f"Paragraph {n}: " + "word " * 6 + "end." for n in range(1, 5)]
    server.enqueue(Reply(text="<think>plan the four parts</think>" + "\n\n".join(paragraphs)))
    blocks: list[tuple[str, int]] = []
    deltas_seen: list[int] = []

    async def on_block(payload: ReplyPayload) -> None:
        blocks.append((payload.text or "", len(deltas_seen)))

    def count(event: Event) -> None:
        if event.type == "message_update":
            deltas_seen.append(1)

    async with Runtime(config(tmp_path, server), load_entrypoints=False) as runtime:
        result = await runtime.run(
            "Write four paragraphs.",
            block_streaming=True,
            on_block_reply=on_block,
            on_event=count,
        )
    assert result.ok
    assert [text for text, _ in blocks] == paragraphs
    # they streamed: the first block went out long before the last delta arrived
    assert blocks[0][1] < blocks[-1][1]
    assert all("plan the four parts" not in text for text, _ in blocks)


async def test_block_streaming_off_sends_no_blocks(tmp_path, server):
    server.enqueue(Reply(text="One.\n\nTwo."))
    blocks: list[ReplyPayload] = []
    result, _ = await run_once(tmp_path, server, "hi", on_block_reply=blocks.append)
    assert result.text == "One.\n\nTwo." and blocks == []


@tool
async def message(action: str, to: str, message: str) -> str:
    """Send a message to a chat."""
    return f"sent to {to}"


@tool(name="message")
async def broken_message(action: str, to: str, message: str) -> str:
    """A messaging tool whose delivery fails."""
    raise RuntimeError("delivery failed")


SENT = "Your package will arrive on Tuesday at noon."


async def test_text_a_messaging_tool_sent_is_removed_from_the_final_reply(tmp_path, server):
    server.enqueue(
        Reply(tool_calls=[("message", {"action": "send", "to": "chat:1", "message": SENT})]),
        Reply(text=SENT),
    )
    blocks: list[ReplyPayload] = []
    result, _ = await run_once(
        tmp_path,
        server,
        "Tell them when it arrives.",
        tools=[message],
        block_streaming=True,
        on_block_reply=blocks.append,
    )
    assert result.ok, result.error
    assert result.text == ""  # already sent by the tool: not sent twice
    assert blocks == []


async def test_a_failed_messaging_send_never_swallows_the_reply(tmp_path, server):
    server.enqueue(
        Reply(tool_calls=[("message", {"action": "send", "to": "chat:1", "message": SENT})]),
        Reply(text=SENT),
    )
    result, _ = await run_once(tmp_path, server, "Tell them.", tools=[broken_message])
    assert result.text.startswith(SENT)


@tool
async def read(path: str) -> str:
    """Read a file."""
    return f"42 lines in {path}\nline two"


async def test_verbose_inlines_tool_lines_and_usage_sums_every_call(tmp_path, server):
    server.enqueue(Reply(tool_calls=[("read", {"path": "notes/todo.md"})]), Reply(text="Done."))
    result, _ = await run_once(tmp_path / "a", server, "Read it.", tools=[read], verbose="full")
    texts = [p.text for p in result.payloads]
    assert texts[-1] == "Done."
    assert any("notes/todo.md" in (t or "") and "42 lines in" in (t or "") for t in texts[:-1])
    calls = [m for m in result.messages if isinstance(m, AssistantMessage)]
    assert len(calls) == 2
    assert result.usage.input == sum(m.usage.input for m in calls) > 0
    assert result.usage.output == sum(m.usage.output for m in calls) > 0
    server.enqueue(Reply(tool_calls=[("read", {"path": "notes/todo.md"})]), Reply(text="Done."))
    quiet, _ = await run_once(tmp_path / "b", server, "Read it.", tools=[read])
    assert [p.text for p in quiet.payloads] == ["Done."]


def test_cli_run_prints_no_reasoning_and_a_usage_line(tmp_path, server, monkeypatch):
    monkeypatch.setenv("OPENCLAW_RUNTIME_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "")
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "0")
    path = tmp_path / "c.toml"
    path.write_text(
        '[agent]\nmodel = "srv/m1"\n'
        f'[[models]]\nid = "m1"\napi = "openai-completions"\nprovider = "srv"\n'
        f'base_url = "{server.base_url}"\n'
        f'[[auth.profiles]]\nid = "srv:a"\nprovider = "srv"\nmode = "api_key"\n'
        f'credential = "{KEY}"\n'
    )
    server.enqueue(Reply(text=TAGGED))
    result = CliRunner().invoke(cli, ["--config", str(path), "run", "What is 2+2?"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "The answer is 4.\n"
    assert "secret plan" not in result.output
    served = server.requests[-1]
    assert served.outcome == "reply"
    (usage_line,) = result.stderr.splitlines()
    server.enqueue(Reply(text=TAGGED))
    as_json = CliRunner().invoke(cli, ["--config", str(path), "run", "--json", "What is 2+2?"])
    data = json.loads(as_json.stdout)
    assert data["text"] == "The answer is 4."
    usage = data["usage"]
    assert usage["input"] > 0 and usage["output"] > 0
    assert usage_line == (
        f"usage: {usage['input']} in · {usage['output']} out · {usage['cacheRead']} cache read"
        f" · {usage['cacheWrite']} cache write · {usage['totalTokens']} total"
    )


def test_cli_run_accepts_the_verbose_levels(tmp_path, server, monkeypatch):
    monkeypatch.setenv("OPENCLAW_RUNTIME_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "")
    path = tmp_path / "c.toml"
    path.write_text(
        '[agent]\nmodel = "srv/m1"\n[agent.reply]\nverbose = "on"\n'
        f'[[models]]\nid = "m1"\napi = "openai-completions"\nprovider = "srv"\n'
        f'base_url = "{server.base_url}"\n'
        f'[[auth.profiles]]\nid = "srv:a"\nprovider = "srv"\nmode = "api_key"\n'
        f'credential = "{KEY}"\n'
    )
    # a CLI run has no tools, so nothing is inlined: the flags and the config must parse
    for flags in (["-v"], ["-vv"], ["--verbose"]):
        server.enqueue(Reply(text="Plain."))
        result = CliRunner().invoke(cli, ["--config", str(path), "run", *flags, "Hi"])
        assert result.exit_code == 0, result.output
        assert result.stdout == "Plain.\n"


async def test_a_block_reply_callback_that_raises_does_not_end_the_run(tmp_path, server):
    server.enqueue(Reply(text="First paragraph.\n\nSecond paragraph."))
    calls: list[str] = []

    def on_block(payload: ReplyPayload) -> None:
        calls.append(payload.text or "")
        raise RuntimeError("channel down")

    result, _ = await run_once(
        tmp_path, server, "hi", block_streaming=True, on_block_reply=on_block
    )
    assert result.ok, result.error
    assert calls == ["First paragraph.", "Second paragraph."]
    assert result.text == "First paragraph.\n\nSecond paragraph."


@tool(name="exec")
async def exec_tool(command: str) -> str:
    """Run a shell command."""
    raise AssertionError("a tool call written inside <think> must never run")


async def test_a_tool_call_written_inside_think_is_reasoning_not_a_call(tmp_path, server):
    server.enqueue(Reply(text='<think>[exec]\n{"command": "rm -rf /"}\n[/exec]</think>No.'))
    result, deltas = await run_once(tmp_path, server, "Clean up.", tools=[exec_tool])
    assert result.ok, result.error
    assert result.text == "No."
    assert [m.role for m in result.messages] == ["user", "assistant"]
    assert "rm -rf" in "".join(deltas.thinking)
