"""The live-run registry's policy and parts by table (issue 15 §1, OpenClaw's ``runs.ts``):
when a message is taken, the identity check on clear, the waiters, the drain order of the
queues, the retry plan after a delivered steer, and the cross-process inbox on disk."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest

from openclaw_runtime._files import _pid_alive as pid_alive
from openclaw_runtime.runner.attempt_input import plan_attempt_input
from openclaw_runtime.runner.live import (
    LiveRunHandle,
    LiveRunRegistry,
    decide_live_message,
    validate_live_text,
)
from openclaw_runtime.runner.live_inbox import FileLiveInbox
from openclaw_runtime.runner.live_run import live_inbox_of
from openclaw_runtime.runner.steering_store import JsonFileSteeringStore


@pytest.mark.parametrize(
    ("kind", "active", "stopped", "compacting", "expected"),
    [
        ("steer", False, False, False, "no_active_run"),
        ("follow_up", False, True, True, "no_active_run"),
        ("steer", True, True, False, "stopped"),
        ("follow_up", True, True, True, "stopped"),
        ("steer", True, False, True, "compacting"),
        ("follow_up", True, False, True, "queued"),
        ("steer", True, False, False, "queued"),
        ("follow_up", True, False, False, "queued"),
    ],
)
def test_decide_live_message(
    kind: str, active: bool, stopped: bool, compacting: bool, expected: str
) -> None:
    assert (
        decide_live_message(
            kind,  # type: ignore[arg-type]
            active=active,
            stopped=stopped,
            compacting=compacting,
        )
        == expected
    )


@pytest.mark.parametrize(
    ("additions", "mode", "prompt"),
    [((), "continue", None), (("be brief",), "prompt", "be brief")],
)
def test_a_retry_after_a_delivered_steer_continues_from_it(
    additions: tuple[str, ...], mode: str, prompt: str | None
) -> None:
    plan = plan_attempt_input(
        first_attempt=False,
        base_prompt="write a poem",
        additions=additions,
        last_role="user",
        last_is_run_prompt=False,
        leaf_is_run_prompt=False,
        last_is_live_message=True,
    )
    assert (plan.mode, plan.prompt, plan.rewind_prompt) == (mode, prompt, False)
    # without the flag the same branch re-sends the prompt (the old, duplicating plan)
    before = plan_attempt_input(
        first_attempt=False,
        base_prompt="write a poem",
        additions=additions,
        last_role="user",
        last_is_run_prompt=False,
        leaf_is_run_prompt=False,
    )
    assert before.mode == "prompt" and "write a poem" in (before.prompt or "")


@pytest.mark.parametrize(
    ("text", "error"), [(None, TypeError), ("", ValueError), (" \n", ValueError)]
)
def test_live_text_is_validated(text: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        validate_live_text(text)


def handle(session_id: str = "s1", key: str | None = "k1") -> LiveRunHandle:
    return LiveRunHandle(session_id=session_id, session_key=key, run_id=f"run-{session_id}")


pytestmark = pytest.mark.anyio


async def test_clear_only_removes_the_handle_that_is_registered() -> None:
    registry = LiveRunRegistry()
    first, second = handle(), handle()
    registry.set(first)
    registry.set(second)  # a newer run of the same session took the slot
    assert registry.session_id_for("k1") == "s1"
    assert not registry.clear(first)  # identity check: the newer one stays
    assert registry.get("s1") is second and first.ended.is_set()
    assert registry.clear(second)
    assert registry.get("s1") is None and registry.session_id_for("k1") is None


async def test_waiters_wake_when_the_run_is_cleared() -> None:
    registry = LiveRunRegistry()
    run = handle()
    registry.set(run)
    woke: list[bool] = []

    async def waiter() -> None:
        woke.append(await registry.wait_for_end("s1", timeout_s=30))

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        assert woke == []
        registry.clear(run)
    assert woke == [True, True]
    assert await registry.wait_for_end("s1")  # nothing active: at once
    assert await registry.wait_for_end(None)


async def test_follow_up_drain_takes_late_steers_first_then_stops() -> None:
    run = handle()
    assert run.offer("follow_up", "later") == "queued"
    assert run.offer("steer", "now") == "queued"
    assert [m.text() for m in await run.drain_follow_ups()] == ["now"]
    assert [m.text() for m in await run.drain_follow_ups()] == ["later"]
    assert not run.stopped
    assert await run.drain_follow_ups() == []
    assert run.stopped and run.offer("steer", "too late") == "stopped"
    assert [m.text() for m in run.delivered] == ["now", "later"]
    run.close()
    assert run.offer("follow_up", "gone") == "no_active_run"


async def test_compacting_refuses_steers_but_takes_follow_ups() -> None:
    run = handle()
    run.compacting = True
    assert run.offer("steer", "x") == "compacting"
    assert run.offer("follow_up", "y") == "queued"
    assert run.pending() == 1


async def test_the_request_signal_aborts_the_handle() -> None:
    from openclaw_runtime.abort import AbortController

    outer = AbortController()
    run = LiveRunHandle(session_id="s", session_key=None, run_id="r", abort_signal=outer.signal)
    outer.abort("stop")
    assert run.signal.aborted and run.signal.reason == "stop"


# --------------------------------------------------------------------------- the inbox


async def test_inbox_takes_messages_only_while_a_live_owner_holds_it(tmp_path: Path) -> None:
    store = JsonFileSteeringStore(tmp_path / "subagents" / "runs.json")
    inbox = live_inbox_of(store)
    assert isinstance(inbox, FileLiveInbox)
    assert not await inbox.push("s1", "steer", "nobody listens")
    assert not await inbox.owned("s1")
    await inbox.open("s1", "run-1")
    assert await inbox.owned("s1")
    assert await inbox.push("s1", "steer", "first")
    assert await inbox.push("s1", "follow_up", "second")
    assert await inbox.take("s1") == [("steer", "first"), ("follow_up", "second")]
    assert await inbox.take("s1") == []
    assert await inbox.push("s1", "steer", "late")
    # a later run that took the inbox over is not closed by the earlier one
    assert await inbox.close("s1", "run-0") == []
    assert await inbox.close("s1", "run-1") == [("steer", "late")]
    assert not await inbox.push("s1", "steer", "after the end")


async def test_inbox_of_a_dead_owner_refuses(tmp_path: Path) -> None:
    inbox = FileLiveInbox(tmp_path / "live")
    dead = await anyio.run_process([sys.executable, "-c", "import os; print(os.getpid())"])
    pid = int(dead.stdout)
    assert not pid_alive(pid) and pid_alive(os.getpid())
    (tmp_path / "live").mkdir()
    (tmp_path / "live" / "s1.owner").write_text(json.dumps({"pid": pid, "runId": "r"}))
    assert not await inbox.push("s1", "steer", "to a crashed run")
    assert not (tmp_path / "live" / "s1.inbox.jsonl").exists()


async def test_inbox_redacts_secrets_and_rejects_bad_session_ids(tmp_path: Path) -> None:
    inbox = FileLiveInbox(tmp_path / "live")
    await inbox.open("s1", "r")
    secret = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
    assert await inbox.push("s1", "steer", f"my key is {secret}")
    assert secret not in (tmp_path / "live" / "s1.inbox.jsonl").read_text()
    with pytest.raises(ValueError):
        await inbox.push("../escape", "steer", "x")


async def test_inbox_open_waits_off_the_loop_when_the_lock_is_held(tmp_path: Path) -> None:
    import filelock

    inbox = FileLiveInbox(tmp_path / "live")
    (tmp_path / "live").mkdir()
    other = filelock.FileLock(tmp_path / "live" / "s1.lock")  # another writer holds it
    other.acquire()
    opened = anyio.Event()

    async def open_inbox() -> None:
        await inbox.open("s1", "r1")
        opened.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(open_inbox)
        await anyio.wait_all_tasks_blocked()
        assert not opened.is_set()  # waiting for the lock, in a thread: the loop runs on
        other.release()
    assert opened.is_set() and await inbox.owned("s1")
