"""The tool policy end to end over real local HTTP (issue 12 §1), on asyncio and trio.

A ``FaultInjectingOpenAIServer`` records every request body: the ``tools`` the provider was
offered must be exactly what the layers allow for that run (sender, group, model), a fallback
model on another provider gets its own provider layer, and a scripted call to a tool that was
filtered out (the model hallucinating it) becomes an error tool result while the tool's
function never runs.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.agent import AgentTool, tool
from openclaw_runtime.messages import ToolResultMessage
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer, Reply
from tests.run_support import RunLog

pytestmark = pytest.mark.anyio

POLICY: dict[str, Any] = {
    "tools": {
        "deny": ["group:automation"],
        "by_provider": {
            "mock/main": {"allow": ["group:fs", "group:runtime", "web_*", "deploy", "lookup"]},
            "backup": {"deny": ["web_search"]},
        },
    },
    "groups": {"family": {"tools": {"deny": ["group:runtime"]}}},
}


class Tools:
    """Real tools that record every call that reached their function."""

    def __init__(self) -> None:
        self.ran: list[str] = []

        @tool
        def read(path: str) -> str:
            """Read a file from the workspace."""
            self.ran.append("read")
            return f"contents of {path}"

        @tool
        def write(path: str, text: str) -> str:
            """Write a file."""
            self.ran.append("write")
            return "written"

        @tool(name="exec")
        def exec_(command: str) -> str:
            """Run a shell command."""
            self.ran.append("exec")
            return "ran"

        @tool(owner_only=True)
        def deploy(target: str) -> str:
            """Deploy the service."""
            self.ran.append("deploy")
            return "deployed"

        @tool
        def cron(spec: str) -> str:
            """Schedule a job."""
            self.ran.append("cron")
            return "scheduled"

        @tool
        def web_search(query: str) -> str:
            """Search the web."""
            self.ran.append("web_search")
            return "results"

        @tool
        def lookup(key: str) -> str:
            """Look a key up."""
            self.ran.append("lookup")
            return "found"

        self.all: list[AgentTool] = [read, write, exec_, deploy, cron, web_search, lookup]


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}) as running:
        yield running


@pytest.fixture
async def runtime(tmp_path: Path, server: FaultInjectingOpenAIServer) -> AsyncIterator[Runtime]:
    def model(model_id: str, provider: str) -> dict[str, Any]:
        return {
            "id": model_id,
            "api": "openai-completions",
            "provider": provider,
            "baseUrl": server.base_url,
            "contextWindow": 64_000,
            "maxTokens": 1024,
        }

    config = {
        "state_dir": str(tmp_path / "state"),
        "models": [model("main", "mock"), model("mini", "backup")],
        "agent": {
            "model": "mock/main",
            "fallbacks": ["backup/mini"],
            "timeout_seconds": 20,
            "tools": {"deny": ["write"]},
        },
        "auth": {
            "profiles": [
                {
                    "id": "mock:0",
                    "provider": "mock",
                    "mode": "api_key",
                    "credential": {"value": "key-a"},
                },
                {
                    "id": "backup:0",
                    "provider": "backup",
                    "mode": "api_key",
                    "credential": {"value": "key-b"},
                },
            ]
        },
        **POLICY,
    }
    made = Runtime(config, load_entrypoints=False)
    made.retry_backoff_scale = 0
    yield made
    await made.aclose()


def offered(body: Any) -> list[str]:
    return [entry["function"]["name"] for entry in body.get("tools", [])]


async def test_a_group_sender_is_offered_only_the_allowed_tools(
    runtime: Runtime, server: FaultInjectingOpenAIServer
) -> None:
    tools = Tools()
    result = await runtime.run(
        "hello", session_id="s-group", tools=tools.all, sender_id="bob", group_id="family"
    )
    assert result.ok, result.error
    # exec: group deny; deploy: owner-only; cron: global deny; write: agent deny
    assert offered(server.requests[-1].body) == ["read", "web_search", "lookup"]


async def test_the_owner_gets_owner_only_tools_and_no_group_layer(
    runtime: Runtime, server: FaultInjectingOpenAIServer
) -> None:
    tools = Tools()
    result = await runtime.run("hello", session_id="s-owner", tools=tools.all)
    assert result.ok, result.error
    assert offered(server.requests[-1].body) == ["read", "exec", "deploy", "web_search", "lookup"]
    not_owner = await runtime.run("hi", session_id="s-bob", tools=tools.all, sender_id="bob")
    assert not_owner.ok
    assert offered(server.requests[-1].body) == ["read", "exec", "web_search", "lookup"]


async def test_a_call_to_a_filtered_tool_is_an_error_result_and_never_runs(
    runtime: Runtime, server: FaultInjectingOpenAIServer
) -> None:
    tools = Tools()
    server.enqueue(
        Reply(
            tool_calls=[
                ("exec", {"command": "rm -rf /"}),  # exists, but the group denies it
                ("deploy", {"target": "prod"}),  # owner-only, the sender is not the owner
                ("read", {"path": "notes.txt"}),
            ]
        )
    )
    log = RunLog()
    result = await runtime.run(
        "go",
        session_id="s-hallucinated",
        tools=tools.all,
        sender_id="bob",
        group_id="family",
        on_event=log,
    )
    assert result.ok, result.error
    assert tools.ran == ["read"]  # neither exec nor deploy reached its function
    results = {m.tool_name: m for m in result.messages if isinstance(m, ToolResultMessage)}
    assert results["exec"].is_error and results["exec"].content[0].text == "Tool exec not found"
    assert results["deploy"].is_error
    assert not results["read"].is_error
    ends = {e.tool_name: e for e in log.of("tool_execution_end")}
    assert not ends["exec"].execution_started and not ends["deploy"].execution_started
    # the follow-up call after the tool results still offered only the allowed tools
    assert len(server.requests) == 2
    assert all(offered(r.body) == ["read", "web_search", "lookup"] for r in server.requests)


async def test_a_fallback_model_gets_its_own_provider_layer(
    runtime: Runtime, server: FaultInjectingOpenAIServer
) -> None:
    server.inject(Fault(kind="overloaded", model="main", times=10))
    tools = Tools()
    result = await runtime.run("hello", session_id="s-fallback", tools=tools.all)
    assert result.ok, result.error
    assert (result.provider, result.model) == ("backup", "mini")
    by_model = {r.model: offered(r.body) for r in server.requests if r.body}
    assert by_model["main"] == ["read", "exec", "deploy", "web_search", "lookup"]
    # [tools.by_provider."mock/main"]'s allow list does not apply; "backup" denies web_search
    assert by_model["mini"] == ["read", "exec", "deploy", "lookup"]


def prompt_tool_names(body: Any) -> list[str]:
    """The tool names the system prompt's Tooling section lists (``- name: summary`` lines)."""
    system = body["messages"][0]
    assert system["role"] == "system"
    text = system["content"]
    start = text.index("## Tooling")
    section = text[start : text.index("\n## ", start + 1)]
    return [line[2:].split(":", 1)[0] for line in section.splitlines() if line.startswith("- ")]


async def test_the_system_prompt_lists_exactly_the_offered_tools(
    runtime: Runtime, server: FaultInjectingOpenAIServer
) -> None:
    server.inject(Fault(kind="overloaded", model="main", times=10))
    tools = Tools()
    result = await runtime.run(
        "hello", session_id="s-prompt", tools=tools.all, sender_id="bob", group_id="family"
    )
    assert result.ok, result.error
    for request in (r for r in server.requests if r.body):
        assert prompt_tool_names(request.body) == offered(request.body)
    by_model = {r.model: prompt_tool_names(r.body) for r in server.requests if r.body}
    assert by_model == {"main": ["read", "web_search", "lookup"], "mini": ["read", "lookup"]}
