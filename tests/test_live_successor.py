"""A compaction successor moves a live run to a new session id mid-run (issue 15 §1 + §2):
the live registry follows it. ``steer(session_id=new)`` and the session key reach the run,
the old id no longer does, and the run's inbox in the steering store moves with it, so
another runtime on the same state dir reaches it too (asyncio and trio, real HTTP)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime.runner.live import LiveRunHandle, LiveRunRegistry
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer
from tests.test_context_engine_lifecycle import engine_of, runtime_with, successor_mover
from tests.test_live_runs import RunInBackground, held, user_texts
from tests.test_run_recovery import KEYS, build_runtime, seed_history

pytestmark = pytest.mark.anyio
HANG_GUARD_S = 60  # only turns a hang into a failure; nothing is timed against it


@pytest.fixture
def server() -> Any:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as running:
        yield running


def handle(session_id: str, key: str | None = "chat:k") -> LiveRunHandle:
    return LiveRunHandle(session_id=session_id, session_key=key, run_id=f"run-{session_id}")


# --------------------------------------------------------------------------- the registry table


@pytest.mark.parametrize(
    ("registered", "taken", "moved", "expect_ids", "expect_key"),
    [
        # the run is registered, the new id is free: it moves, the key follows
        (True, False, True, ["s-new"], "s-new"),
        # the run already ended (cleared): nothing moves
        (False, False, False, [], None),
        # another run holds the new id: nothing moves
        (True, True, False, ["s-old", "s-new"], "s-old"),
    ],
)
def test_rekey_table(
    registered: bool, taken: bool, moved: bool, expect_ids: list[str], expect_key: str | None
) -> None:
    registry = LiveRunRegistry()
    run = handle("s-old")
    if registered:
        registry.set(run)
    if taken:
        registry.set(handle("s-new", key=None))
    assert registry.rekey(run, "s-new") is moved
    assert sorted(registry.active_session_ids()) == sorted(expect_ids)
    assert registry.session_id_for("chat:k") == expect_key
    assert (registry.get("s-new") is run) is moved
    assert run.session_id == ("s-new" if moved else "s-old")
    if moved:  # clearing the moved run clears the new id and the key
        assert registry.clear(run) and registry.active_session_ids() == []
        assert registry.session_id_for("chat:k") is None


# --------------------------------------------------------------------------- end to end


async def test_steer_follows_the_run_to_its_compaction_successor(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    engine = engine_of(methods=("after_turn",))
    runtime = await runtime_with(tmp_path, server, engine)
    other = build_runtime(tmp_path, server)  # another runtime on the same state dir
    engine.compact_behaviour = successor_mover(runtime, "s-moved")
    run = RunInBackground()
    try:
        first = await runtime.run("hello", session_key="chat:move")
        old = first.session_id
        await seed_history(runtime, old, turns=2, size=20)
        # the next run overflows, compacts onto the successor, and its retry is held there
        server.inject(Fault(kind="context_overflow", model="main", times=1))
        server.inject(Fault(kind="hold", model="main", after_chunks=2))
        with anyio.fail_after(HANG_GUARD_S):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: run(runtime, "after overflow", session_key="chat:move"))
                await held(server)
                assert runtime.is_run_active(session_id="s-moved")
                assert not runtime.is_run_active(session_id=old)
                assert runtime.is_run_active(session_key="chat:move")
                by_id = await runtime.steer("steer by the new id", session_id="s-moved")
                by_key = await runtime.steer("steer by the key", session_key="chat:move")
                stale = await runtime.steer("steer by the old id", session_id=old)
                remote = await other.steer("steer from elsewhere", session_id="s-moved")
                remote_old = await other.steer("remote by the old id", session_id=old)
                server.release_holds()
    finally:
        await runtime.aclose()
        await other.aclose()
    assert (by_id.reason, by_id.session_id) == ("queued", "s-moved")
    assert (by_key.reason, by_key.session_id) == ("queued", "s-moved")
    assert stale.reason == "no_active_run"
    assert (remote.reason, remote.session_id) == ("queued_remote", "s-moved")
    assert remote_old.reason == "no_active_run"  # the old session's inbox was given up
    assert run.result.ok, run.result.error
    assert run.result.session_id == "s-moved"
    sent = user_texts(server.requests[-1])
    for text in ("steer by the new id", "steer by the key", "steer from elsewhere"):
        assert sent.count(text) == 1, sent
    assert "steer by the old id" not in sent and "remote by the old id" not in sent
    live_dir = tmp_path / "state" / "subagents" / "live"
    assert not list(live_dir.glob("*.owner"))  # both inboxes were given up
