"""Crash at every byte (issue 9 §4): every file the runtime writes, cut at every offset and
hit by single-byte corruptions, still loads — complete entries kept, the damaged part kept
aside, no exception — and the store keeps working after.

The files are produced by real runs over real HTTP (a failing key and a good one, a tool
call, a provider error that ends a turn, a sub-agent result delivered through the steering
queue), then damaged byte by byte. Each file is checked in one loop, not thousands of
parametrized cases, so the whole test stays fast.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.agent import tool
from openclaw_runtime.auth.json_file import JsonFileAuthProfileStore
from openclaw_runtime.auth.operations import mark_auth_profile_failure
from openclaw_runtime.auth.profiles import AuthProfile
from openclaw_runtime.runner.session_index import SessionIndex
from openclaw_runtime.runner.steering import SubagentRunRecord, upsert_subagent_run
from openclaw_runtime.runner.steering_store import JsonFileSteeringStore
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer
from openclaw_runtime.transcript import SessionManager
from openclaw_runtime.transcript.jsonl import invalid_lines_path
from tests.run_support import openai_config

MODELS = {"main": 64_000}
#: Bytes a single-byte corruption writes, cycled over the offsets.
CORRUPTIONS = (b"\xff", b"0", b"{", b'"', b" ", b"]", b"\n", b"\x00")


@tool
async def get_weather(city: str) -> str:
    """The weather for a city."""
    return f"Sunny, 21 C in {city}"


@dataclass
class StateFiles:
    transcript: Path
    failed_transcript: Path
    auth: Path
    index: Path
    runs: Path
    profiles: list[Any]


@pytest.fixture(scope="module")
def state_files(tmp_path_factory: pytest.TempPathFactory) -> StateFiles:
    state = tmp_path_factory.mktemp("state")
    with FaultInjectingOpenAIServer(models=MODELS, keys={"bad": "invalid", "good": "ok"}) as server:
        config = openai_config(
            state, server.base_url, provider="mock", models=MODELS, keys=["bad", "good"]
        )

        async def produce() -> tuple[Path, Path]:
            async with Runtime(config, load_entrypoints=False) as runtime:
                runtime.retry_backoff_scale = 0
                for run_id, requester in (("sub-1", "chat:1"), ("sub-2", "chat:9")):
                    record = SubagentRunRecord.completed(
                        run_id=run_id,
                        requester_session_key=requester,
                        task="look it up",
                        result_text=f"result of {run_id} ✓",
                        ended_at=1_000,
                    )
                    await upsert_subagent_run(runtime.steering_store, record)
                first = await runtime.run(
                    "What is the weather in Lisbon? use get_weather",
                    session_key="chat:1",
                    tools=[get_weather],
                )
                assert first.ok, first.error
                server.inject(Fault("status", status=400, times=20))
                failed = await runtime.run("this one fails", session_key="chat:2")
                assert not failed.ok
                return (
                    Path(runtime.session_store.path_for(first.session_id)),
                    Path(runtime.session_store.path_for(failed.session_id)),
                )

        transcript, failed_transcript = anyio.run(produce)
    return StateFiles(
        transcript,
        failed_transcript,
        state / "auth-profiles.json",
        state / "sessions" / "index.json",
        state / "subagents" / "runs.json",
        config["auth"]["profiles"],
    )


def damaged_versions(data: bytes, step: int = 3) -> list[tuple[str, bytes]]:
    """Every prefix, then one single-byte corruption at every ``step``-th offset (the byte
    written cycles through ``CORRUPTIONS``)."""
    cuts = [(f"cut at {n}", data[:n]) for n in range(len(data) + 1)]
    hits = [
        (
            f"byte {i} -> {CORRUPTIONS[i % len(CORRUPTIONS)]!r}",
            data[:i] + CORRUPTIONS[i % len(CORRUPTIONS)] + data[i + 1 :],
        )
        for i in range(0, len(data), step)
        if data[i : i + 1] != CORRUPTIONS[i % len(CORRUPTIONS)]
    ]
    return cuts + hits


def clear_beside(path: Path) -> None:
    for other in path.parent.iterdir():
        if other != path and other.name.startswith(path.name) and not other.name.endswith(".lock"):
            other.unlink()


def nonblank_lines(data: bytes) -> list[bytes]:
    return [line.rstrip(b"\r") for line in data.split(b"\n") if line.strip()]


def side_lines(session: Path) -> list[bytes]:
    side = invalid_lines_path(session)
    if not side.exists():
        return []
    records = [json.loads(line) for line in side.read_text().splitlines()]
    return [r["raw"].encode() if "raw" in r else base64.b64decode(r["rawBase64"]) for r in records]


def parses_as_object(data: bytes) -> bool:
    try:
        return isinstance(orjson.loads(data), dict)
    except orjson.JSONDecodeError:
        return False


def check_json_state_file(
    path: Path,
    original: bytes,
    load: Callable[[], Any],
    use: Callable[[], None],
    *,
    valid: Callable[[bytes], bool] = parses_as_object,
) -> int:
    """Load every damaged version of one JSON state file; returns how many were set aside."""
    set_aside = 0
    for label, data in damaged_versions(original):
        clear_beside(path)
        path.write_bytes(data)
        load()  # never raises
        asides = list(path.parent.glob(f"{path.name}.corrupt-*"))
        if not data.strip() or valid(data):
            assert not asides, label
        else:
            (aside,) = asides
            assert aside.read_bytes() == data, label  # kept byte for byte
            set_aside += 1
        use()  # and the store keeps working: an update writes a fresh, valid file
        assert valid(path.read_bytes()), label
    return set_aside


def test_the_auth_ledger_survives_every_cut_and_corruption(state_files: StateFiles) -> None:
    path = state_files.auth
    original = path.read_bytes()
    stats = json.loads(original)["usageStats"]
    assert stats["mock:p0"]["errorCount"] >= 1  # the real run recorded the failing key
    profiles = [AuthProfile.model_validate(p) for p in state_files.profiles]

    def load() -> None:
        JsonFileAuthProfileStore(path, profiles=profiles).load_sync()

    def use() -> None:
        store = JsonFileAuthProfileStore(path, profiles=profiles)
        anyio.run(lambda: mark_auth_profile_failure(store, "mock:p1", "rate_limit", now_ms=1))

    assert check_json_state_file(path, original, load, use) > len(original) // 2


def test_the_session_index_survives_every_cut_and_corruption(state_files: StateFiles) -> None:
    path = state_files.index
    original = path.read_bytes()
    assert set(json.loads(original)["sessions"]) == {"chat:1", "chat:2"}

    def load() -> None:
        index = SessionIndex(path)
        index.lookup_id_sync("chat:1")
        index.lookup_key_sync("anything")
        index.entries_sync()

    def use() -> None:
        anyio.run(SessionIndex(path).bind, "chat:3", "s3")

    def valid(data: bytes) -> bool:
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError:
            return False
        return isinstance(document, dict) and isinstance(document.get("sessions", {}), dict)

    assert check_json_state_file(path, original, load, use, valid=valid) > len(original) // 2


def test_the_steering_queue_survives_every_cut_and_corruption(state_files: StateFiles) -> None:
    path = state_files.runs
    original = path.read_bytes()
    runs = json.loads(original)["runs"]
    assert runs["sub-1"]["delivery"]["status"] != "pending"  # the run delivered it
    assert runs["sub-2"]["delivery"]["status"] == "pending"

    def load() -> None:
        JsonFileSteeringStore(path).load_sync()

    def use() -> None:
        record = SubagentRunRecord.completed(run_id="sub-3", requester_session_key="chat:3")
        JsonFileSteeringStore(path).update_sync(lambda runs: runs.__setitem__("sub-3", record))

    def valid(data: bytes) -> bool:
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError:
            return False
        return isinstance(document, dict) and isinstance(document.get("runs"), dict)

    assert check_json_state_file(path, original, load, use, valid=valid) > len(original) // 2


@pytest.mark.parametrize("which", ["transcript", "failed_transcript"])
def test_a_transcript_survives_every_cut_and_corruption(state_files: StateFiles, which: str):
    source: Path = getattr(state_files, which)
    original = source.read_bytes()
    lines = original.splitlines(keepends=True)
    ids = [json.loads(line)["id"] for line in lines[1:]]
    if which == "failed_transcript":
        assert json.loads(lines[-1])["message"]["stopReason"] == "error"
    else:
        kinds = [json.loads(line).get("message", {}).get("role") for line in lines[1:]]
        assert "toolResult" in kinds
    path = source.parent.parent / "damaged" / source.name
    path.parent.mkdir(exist_ok=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    for label, data in damaged_versions(original):
        clear_beside(path)
        path.write_bytes(data)
        manager = SessionManager.open_sync(path)  # never raises
        manager.build_session_context()  # what a run does next: never raises either
        kept = {entry["id"] for entry in manager.get_entries()}
        # every entry whose line is intact (and complete) is kept
        for number, entry_id in enumerate(ids, start=1):
            start, end = starts[number], starts[number + 1]
            own_line = data[start - 1 : start] == b"\n"  # not merged into the line before
            intact = own_line and (
                data[start:end] == lines[number]
                or (len(data) == end - 1 and data[start:] == lines[number][:-1])
            )
            if intact:
                assert entry_id in kept, f"{label}: lost {entry_id}"
        # nothing is lost: every line of the damaged file is in the session or the side file
        final = set(nonblank_lines(path.read_bytes()))
        aside = set(side_lines(path))
        blocks_aside = {
            json.loads(raw)["entryId"] for raw in aside if raw.startswith(b'{"entryId"')
        }
        for line in nonblank_lines(data):
            if line in final or line in aside:
                continue
            # an entry rewritten without an unusable content block: the block is aside
            entry_id = json.loads(line)["id"]
            assert entry_id in kept and entry_id in blocks_aside, f"{label}: lost {line[:60]!r}"
        # once loaded, it loads again without any change
        assert not SessionManager.open_sync(path).repair_report.repaired, label
