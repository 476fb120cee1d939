"""Goes through the real entry point: proves pyproject's [project.entry-points] is right."""

from __future__ import annotations

import pytest

from openclaw_runtime import RunBlockedError, Runtime


@pytest.fixture
def runtime():
    rt = Runtime(on_load_failure="raise", allow=["hello"])
    yield rt
    rt.close()


def test_hello_is_discovered_through_its_entry_point(runtime):
    records = {r.name: r for r in runtime.plugin_records()}
    hello = records["hello"]
    assert hello.source == "entrypoint"
    assert hello.status == "loaded"
    assert hello.distribution == "openclaw-runtime-hello"
    assert hello.version == "0.1.0"
    assert hello.entry_point == "openclaw_runtime_hello.plugin"
    assert hello.hooks == ["before_agent_run", "register_models", "register_providers"]
    runtime.plugin_manager.check_pending()


def test_hello_registers_provider_and_model(runtime):
    assert runtime.components.providers.registration("hello").plugin == "hello"
    model = runtime.resolve_model("greeter-latest")
    assert model.ref == "hello/greeter"
    assert runtime.models.owner("hello/greeter") == "hello"


@pytest.mark.anyio
async def test_hello_greets_and_vetoes(runtime):
    agent = runtime.create_agent(model="greeter-latest")
    await agent.prompt("Ada")
    assert agent.state.messages[-1].text() == "Hello, Ada!"
    with pytest.raises(RunBlockedError, match="does not greet") as info:
        await agent.prompt("something forbidden")
    assert info.value.plugin_name == "hello"
    assert len(agent.state.messages) == 2  # the vetoed prompt never entered the transcript
