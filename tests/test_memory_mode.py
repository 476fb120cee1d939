"""Memory mode end to end (issue 13: "any faster mode ... is opt-in and documented"): a
runtime with ``memory=True`` / ``[backends] default = "memory"`` runs turns with tools,
sub-agent steering, a live steer, a manual compaction and an overflow compaction over real
HTTP, and afterwards nothing exists under its state dir or in its working directory; the
switch composes with explicit ``[backends]`` keys and refuses what it cannot honour."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime import ConfigurationError, Runtime, UnknownBackendError
from openclaw_runtime.containment.memory_record import InMemoryFaultRecord
from openclaw_runtime.runner.file_lanes import FileLanes
from openclaw_runtime.runner.steering import SubagentRunRecord, upsert_subagent_run
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer
from openclaw_runtime.transcript.memory import MemorySessionStore
from openclaw_runtime.transcript.store import JsonlSessionStore
from tests.test_run_recovery import KEYS, Recorder, assert_lifecycle, build_runtime, get_weather

pytestmark = pytest.mark.anyio


def tree_of(root: Path) -> list[str]:
    """Every path under ``root`` (empty when it does not exist)."""
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as running:
        yield running


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory: a backend writing to relative paths would show here."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def memory_runtime(tmp_path: Path, server: FaultInjectingOpenAIServer, **options: Any) -> Runtime:
    base = build_runtime(tmp_path, server, **options)  # the test suite's usual config
    runtime = Runtime(base.config, memory=True, load_entrypoints=False)
    runtime.retry_backoff_scale = 0
    return runtime


def user_texts(request: Any) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m["role"] == "user"]


async def test_turns_with_tools_steering_and_compaction_write_no_file(
    tmp_path: Path, workdir: Path, server: FaultInjectingOpenAIServer
) -> None:
    runtime = memory_runtime(tmp_path, server, keys=("key-a",), agent={"keep_recent_tokens": 1})
    state_dir = runtime.config.state_dir
    try:
        # 1. a tool-calling turn
        recorder = Recorder()
        first = await runtime.run(
            "Weather in Paris? Use get_weather.",
            tools=[get_weather],
            session_key="chat:1",
            on_event=recorder,
        )
        assert first.ok, first.error
        assert "Sunny, 21 C in" in first.text
        assert_lifecycle(recorder)
        assert first.session_file == f"memory:{first.session_id}"

        # 2. a sub-agent result steers the next turn of its requester, once
        await upsert_subagent_run(
            runtime.steering_store,
            SubagentRunRecord.completed(
                run_id="child-1",
                requester_session_key="chat:1",
                created_at=1_000,
                ended_at=2_000,
                task="look up the release date",
                result_text="The release is on 2026-12-24.",
            ),
        )
        steered = await runtime.run("status?", session_key="chat:1")
        assert steered.ok, steered.error
        assert "2026-12-24" in server.requests[-1].body["messages"][-1]["content"]
        assert (await runtime.steering_store.load())["child-1"].delivery.status == "delivered"

        # 3. a live steer lands in the running turn (no inbox file: this process only)
        server.inject(Fault(kind="hold", model="main", after_chunks=2))
        live: dict[str, Any] = {}

        async def run_held() -> None:
            live["result"] = await runtime.run("write a poem", session_key="chat:1")

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_held)
            assert await anyio.to_thread.run_sync(server.wait_for_held, 1, 10.0)
            answer = await runtime.steer("also a haiku", session_key="chat:1")
            assert answer is not None and answer.reason == "queued"
            server.release_holds()
        assert live["result"].ok, live["result"].error
        assert user_texts(server.requests[-1])[-1] == "also a haiku"

        # 4. a manual compaction rewrites the in-memory transcript
        compacted = await runtime.compact_session(session_key="chat:1")
        assert compacted.ok and compacted.compacted, compacted.reason
        after = await runtime.run("and now?", session_key="chat:1")
        assert after.ok, after.error
        store = runtime.session_store
        assert isinstance(store, MemorySessionStore)
        lines = store.export_jsonl(after.session_id).decode().splitlines()
        assert any('"type":"compaction"' in line for line in lines)
    finally:
        await runtime.aclose()
    assert tree_of(state_dir) == []
    assert not state_dir.exists()
    assert tree_of(workdir) == []


async def test_an_overflow_compaction_in_memory_writes_no_file(
    tmp_path: Path, workdir: Path
) -> None:
    # the catalog says 64k, the server allows 3 000 tokens: learn, compact, retry
    with FaultInjectingOpenAIServer(models={"main": 3_000, "mini": 64_000}, keys=KEYS) as server:
        runtime = memory_runtime(tmp_path, server)
        try:
            session = await runtime.session_store.open_or_create("s-overflow", cwd=str(workdir))
            for index in range(6):
                await session.append_message(
                    {"role": "user", "content": f"note {index}: " + "x" * 1_200, "timestamp": 1}
                )
                await session.append_message(
                    {
                        "role": "assistant",
                        "content": [{"type": "text", "text": f"ack {index} " + "y" * 1_200}],
                        "api": "openai-completions",
                        "provider": "mock",
                        "model": "main",
                        "timestamp": 2,
                    }
                )
            await session.aclose()
            result = await runtime.run("and now?", session_id="s-overflow")
            assert result.ok, result.error
            assert result.compactions == 1
            assert server.requests[0].outcome == "overflow"
        finally:
            await runtime.aclose()
    assert tree_of(runtime.config.state_dir) == []
    assert tree_of(workdir) == []


async def test_the_durable_default_does_write_files(
    tmp_path: Path, workdir: Path, server: FaultInjectingOpenAIServer
) -> None:
    # the assertion above is not vacuous: the same turn on the default backends leaves files
    runtime = build_runtime(tmp_path, server)
    try:
        result = await runtime.run("hello", session_key="chat:1")
        assert result.ok, result.error
    finally:
        await runtime.aclose()
    written = tree_of(runtime.config.state_dir)
    assert f"sessions/{result.session_id}.jsonl" in written
    assert "sessions/index.json" in written


# --------------------------------------------------------------------------- the switch


def test_default_applies_to_every_kind_left_unset(tmp_path: Path) -> None:
    runtime = Runtime(
        {
            "state_dir": str(tmp_path / "state"),
            "backends": {"default": "memory", "lanes": "embedded"},
        },
        load_entrypoints=False,
    )
    assert isinstance(runtime.session_store, MemorySessionStore)
    assert isinstance(runtime.lanes, FileLanes)  # named explicitly: kept
    assert isinstance(runtime.fault_record, InMemoryFaultRecord)


def test_memory_true_is_the_same_switch_and_the_default_stays_durable(tmp_path: Path) -> None:
    config = {"state_dir": str(tmp_path / "state")}
    durable = Runtime(config, load_entrypoints=False)
    assert isinstance(durable.session_store, JsonlSessionStore)
    assert durable.config.backends.default is None
    memory = Runtime(config, load_entrypoints=False, memory=True)
    assert memory.config.backends.default == "memory"
    assert isinstance(memory.session_store, MemorySessionStore)
    explicit = Runtime(
        {**config, "backends": {"session_store": "embedded"}}, load_entrypoints=False, memory=True
    )
    assert isinstance(explicit.session_store, JsonlSessionStore)


def test_an_unknown_default_names_the_default_key(tmp_path: Path) -> None:
    runtime = Runtime(
        {"state_dir": str(tmp_path / "state"), "backends": {"default": "nowhere"}},
        load_entrypoints=False,
    )
    with pytest.raises(UnknownBackendError) as caught:
        runtime.services.validate()
    message = str(caught.value)
    assert message.startswith("[backends] default = 'nowhere'")
    assert "'embedded'" in message and "'memory'" in message


def test_memory_lanes_refuse_a_machine_wide_cap(tmp_path: Path) -> None:
    runtime = Runtime(
        {"state_dir": str(tmp_path / "state"), "agent": {"global_cap_scope": "machine"}},
        load_entrypoints=False,
        memory=True,
    )
    with pytest.raises(ConfigurationError, match=r"global_cap_scope = 'machine'.*'memory'"):
        runtime.services.validate()


def test_plugin_faults_are_counted_in_memory(tmp_path: Path) -> None:
    from openclaw_runtime.containment import PluginFault

    runtime = Runtime({"state_dir": str(tmp_path / "state")}, load_entrypoints=False, memory=True)
    record = runtime.fault_record
    fault = PluginFault(plugin="p", hook="h", unit=None, error="boom", at=1.0)
    record.add(fault)
    record.add(fault)
    assert [(e["plugin"], e["count"]) for e in runtime.recorded_plugin_faults()] == [("p", 2)]
    assert runtime.clear_plugin_faults("p") == 1
    assert runtime.recorded_plugin_faults() == []
    assert not (tmp_path / "state").exists()
