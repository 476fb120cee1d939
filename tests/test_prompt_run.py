"""The built system prompt end to end: what the provider received over real local HTTP.

Runs go through ``Runtime.run`` against the fault-injecting OpenAI-compatible server; the
tests read the ``system`` message of the request body the server recorded. Skills and
bootstrap files are real files in a temporary workspace; the skill environment is checked
inside real child processes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime import ConfigurationError, Runtime
from openclaw_runtime.agent import tool
from openclaw_runtime.prompt import IDENTITY_LINE
from openclaw_runtime.prompt.skills import current_skill_env, subprocess_env
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer, Reply

pytestmark = pytest.mark.anyio

KEYS = {"key-a": "ok"}


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "other": 64_000}, keys=KEYS) as s:
        yield s


def config(tmp_path: Path, server: FaultInjectingOpenAIServer, **agent: Any) -> dict[str, Any]:
    models = [
        {
            "id": model_id,
            "api": "openai-completions",
            "provider": "mock",
            "baseUrl": server.base_url,
            "contextWindow": 64_000,
            "maxTokens": 1024,
        }
        for model_id in ("main", "other")
    ]
    return {
        "state_dir": str(tmp_path / "state"),
        "models": models,
        "agent": {"model": "mock/main", "timeout_seconds": 20, **agent},
        "auth": {
            "profiles": [
                {
                    "id": "mock:0",
                    "provider": "mock",
                    "mode": "api_key",
                    "credential": {"value": "key-a"},
                }
            ]
        },
    }


def system_of(request: Any) -> str:
    messages = request.body["messages"]
    assert messages[0]["role"] == "system", messages
    return str(messages[0]["content"])


def write_skill(root: Path, folder: str, front: str, body: str = "Do the thing.\n") -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\n{front}\n---\n{body}", encoding="utf-8")
    return path


@tool
def get_weather(city: str) -> str:
    """Weather for a city.

    Second line of the description: not in the summary."""
    return f"sunny in {city}"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Always answer in haiku.\n", encoding="utf-8")
    (ws / "TOOLS.md").write_text("Weather tool is slow.\n", encoding="utf-8")
    (ws / "SOUL.md").write_text("A calm monk.\n", encoding="utf-8")
    (ws / "CLAUDE.md").write_text("not a default bootstrap file\n", encoding="utf-8")
    write_skill(ws / "skills", "weather", 'name: weather\ndescription: "Forecasts & <maps>"')
    write_skill(
        ws / "skills", "hidden", "name: hidden\ndescription: x\ndisable-model-invocation: true"
    )
    write_skill(ws / "skills", "broken", "name: broken\ndescription: [unclosed")
    return ws


async def test_provider_receives_the_full_prompt(
    tmp_path: Path, server: FaultInjectingOpenAIServer, workspace: Path
) -> None:
    runtime = Runtime(
        config(
            tmp_path,
            server,
            workspace=str(workspace),
            timezone="Asia/Tokyo",
            system_prompt="You are a concise travel assistant.",
        ),
        load_entrypoints=False,
    )
    async with runtime:
        result = await runtime.run("weather in Paris?", tools=[get_weather])
    assert result.ok, result.error
    system = system_of(server.requests[-1])
    lines = system.splitlines()
    assert lines[0] == IDENTITY_LINE
    # exactly the offered tools, with one-line summaries
    assert [ln for ln in lines if ln.startswith("- get_weather")] == [
        "- get_weather: Weather for a city."
    ]
    assert server.requests[-1].tools == ("get_weather",)
    # the configured system_prompt is the user's own section
    assert "## Group Chat Context\nYou are a concise travel assistant.\n" in system
    # workspace, bootstrap files (defaults only: CLAUDE.md is not one), persona line
    assert f"Your working directory is: {workspace}" in system
    assert "## AGENTS.md\nAlways answer in haiku.\n## SOUL.md\nA calm monk.\n## TOOLS.md" in system
    assert "embody its persona" in system
    assert "not a default bootstrap file" not in system
    # skills: listed, escaped; hidden and broken ones left out
    assert "<name>weather</name>" in system
    assert "<description>Forecasts &amp; &lt;maps&gt;</description>" in system
    assert "<name>hidden</name>" not in system and "<name>broken</name>" not in system
    assert "## Current Date & Time\nTime zone: Asia/Tokyo\nDate: " in system
    assert "Runtime: agent=main | " in system and "| model=mock/main |" in system
    assert lines[-1] == "Reasoning: off (hidden unless on/stream)."


async def test_minimal_and_none_modes_over_http(
    tmp_path: Path, server: FaultInjectingOpenAIServer, workspace: Path
) -> None:
    minimal = Runtime(
        config(tmp_path, server, workspace=str(workspace), prompt_mode="minimal", timezone="UTC"),
        load_entrypoints=False,
    )
    async with minimal:
        assert (await minimal.run("hi")).ok
    system = system_of(server.requests[-1])
    assert "## Safety" in system and "## Runtime" in system
    assert "## Skills" not in system and "## Messaging" not in system
    # sub-agents get AGENTS.md and TOOLS.md only
    assert "## AGENTS.md" in system and "## TOOLS.md" in system and "## SOUL.md" not in system

    none = Runtime(
        config(tmp_path, server, prompt_mode="none", system_prompt="Be brief."),
        load_entrypoints=False,
    )
    async with none:
        assert (await none.run("hi")).ok
    assert system_of(server.requests[-1]) == f"{IDENTITY_LINE}\nBe brief."


async def test_request_system_prompt_replaces_the_configured_one(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    runtime = Runtime(config(tmp_path, server, system_prompt="configured"), load_entrypoints=False)
    async with runtime:
        assert (await runtime.run("hi", system_prompt="per request")).ok
    system = system_of(server.requests[-1])
    assert "## Group Chat Context\nper request\n" in system and "configured" not in system


async def test_fallback_attempt_names_its_own_model(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    server.inject(Fault(kind="overloaded", model="main", times=10))
    runtime = Runtime(config(tmp_path, server, fallbacks=["mock/other"]), load_entrypoints=False)
    runtime.retry_backoff_scale = 0
    async with runtime:
        result = await runtime.run("hi")
    assert result.ok and result.model == "other", result.error
    assert "| model=mock/other | default_model=mock/main |" not in system_of(server.requests[0])
    assert "| model=mock/main |" in system_of(server.requests[0])
    assert "| model=mock/other | default_model=mock/main |" in system_of(server.requests[-1])


# --------------------------------------------------------------------------- skill env


def _env_tool(label: str, arrived: dict[str, anyio.Event], seen: dict[str, Any]) -> Any:
    @tool(name="probe_env")
    async def probe_env() -> str:
        """Report the skill environment."""
        arrived[label].set()
        other = "b" if label == "a" else "a"
        await arrived[other].wait()  # both runs are inside their attempts now
        child = await anyio.run_process(
            [sys.executable, "-c", "import os; print(os.environ.get('SKILL_TOKEN', '-'))"],
            env=subprocess_env(),
        )
        seen[label] = (dict(current_skill_env()), child.stdout.decode().strip())
        return "done"

    return probe_env


async def test_concurrent_runs_keep_their_own_skill_env(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    runtimes = {}
    for label, model in (("a", "main"), ("b", "other")):
        ws = tmp_path / f"ws-{label}"
        write_skill(
            ws / "skills",
            "deploy",
            f"name: deploy\ndescription: d\nenv:\n  SKILL_TOKEN: {label}-front",
        )
        runtimes[label] = Runtime(
            config(
                tmp_path / label,
                server,
                model=f"mock/{model}",
                workspace=str(ws),
                # config wins over what SKILL.md declares
                skill_env={"deploy": {"SKILL_TOKEN": f"{label}-config"}} if label == "b" else {},
            ),
            load_entrypoints=False,
        )
        server.enqueue(Reply(tool_calls=[("probe_env", {})], model=model))
    arrived = {"a": anyio.Event(), "b": anyio.Event()}
    seen: dict[str, Any] = {}
    results: dict[str, Any] = {}

    async def run(label: str) -> None:
        results[label] = await runtimes[label].run(
            "deploy", tools=[_env_tool(label, arrived, seen)]
        )

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            group.start_soon(run, "a")
            group.start_soon(run, "b")
    for runtime in runtimes.values():
        await runtime.aclose()
    assert results["a"].ok and results["b"].ok
    assert seen["a"] == ({"SKILL_TOKEN": "a-front"}, "a-front")
    assert seen["b"] == ({"SKILL_TOKEN": "b-config"}, "b-config")
    # restored after the attempts, and never written to the process environment
    assert dict(current_skill_env()) == {}
    assert "SKILL_TOKEN" not in os.environ


async def test_skill_env_is_restored_after_a_failed_attempt(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    ws = tmp_path / "ws"
    write_skill(ws / "skills", "deploy", "name: deploy\ndescription: d\nenv:\n  SKILL_TOKEN: x")
    server.inject(Fault(kind="status", status=400, model="main", times=5))
    runtime = Runtime(config(tmp_path, server, workspace=str(ws)), load_entrypoints=False)
    async with runtime:
        result = await runtime.run("hi")
    assert not result.ok
    assert dict(current_skill_env()) == {}
    assert "SKILL_TOKEN" not in os.environ


# --------------------------------------------------------------------------- config


@pytest.mark.parametrize(
    ("agent", "message"),
    [
        ({"prompt_mode": "tiny"}, "agent.prompt_mode"),
        ({"timezone": "Mars/Olympus"}, "agent.timezone: Value error, unknown time zone"),
        ({"skill_env": {"s": {"PATH": "/evil"}}}, "PATH may not be overridden by a skill"),
        ({"skill_env": {"s": {"1BAD": "x"}}}, "'1BAD' is not a valid environment variable"),
        ({"bootstrap_files": ["../secrets.md"]}, "agent.bootstrap_files"),
        ({"bootstrap_max_chars": 0}, "agent.bootstrap_max_chars"),
        ({"sandbox": {"access": "all"}}, "agent.sandbox.access"),
        ({"promt_mode": "full"}, "agent.promt_mode"),
    ],
)
def test_bad_prompt_config_names_the_key(agent: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(").replace(".", r"\.")):
        Runtime({"agent": agent}, load_entrypoints=False)
