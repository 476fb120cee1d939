"""A run whose turn-end flush fails reports it as the session store's error, naming the
session, and loses nothing of the turn (dur7).

Before: the flush's ``OSError`` went through the kernel loop's ``close_after_failure`` and
came out as a failed model reply (``kind="provider"``, "LLM request failed.") or, when the
closing flush failed too, as a raw exception group out of ``Runtime.run``; the turn's
entries were gone from the file while later ones pointed at them."""

from __future__ import annotations

import errno
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime, hookimpl
from openclaw_runtime import _files as files_module
from openclaw_runtime.events import AssistantMessageEventStream, Done
from openclaw_runtime.messages import AssistantMessage, TextContent

pytestmark = pytest.mark.anyio

MODEL = {"id": "m1", "api": "flush-fail", "provider": "fake", "contextWindow": 1_000_000}


def _stream(model: Any, context: Any, options: Any) -> Any:
    async def events() -> Any:
        answer = AssistantMessage(
            content=[TextContent(text=f"answer {len(context.messages)}")],
            api="flush-fail",
            provider="fake",
            model="m1",
            stop_reason="stop",
        )
        yield Done("stop", answer)

    return AssistantMessageEventStream(events())


class _Provider:
    @hookimpl
    def register_providers(self, register: Any) -> None:
        register("flush-fail", _stream)


def _runtime(tmp_path: Path) -> Runtime:
    return Runtime(
        {"state_dir": str(tmp_path), "models": [MODEL], "agent": {"model": "fake/m1"}},
        plugins=[("flush-fail-provider", _Provider())],
        load_entrypoints=False,
        env={},
    )


def _failing_writes(session_file: str, count: int) -> Any:
    """``write_all`` failing ``count`` times (ENOSPC) on the session file, then writing."""
    real = files_module.write_all
    left = [count]
    inode = os.stat(session_file).st_ino

    def write_all(fd: int, data: bytes) -> None:
        if left[0] > 0 and os.fstat(fd).st_ino == inode:
            left[0] -= 1
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    return write_all


def _records(path: str) -> list[dict[str, Any]]:
    with open(path, "rb") as handle:
        return [json.loads(line) for line in handle.read().splitlines()]


@pytest.mark.parametrize("failures", [1, 2, 3, 1_000])
async def test_a_failed_turn_end_flush_is_the_runs_error_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failures: int
) -> None:
    runtime = _runtime(tmp_path)
    session_id = uuid.uuid4().hex
    first = await runtime.run("first", session_id=session_id)
    assert first.ok and first.session_file is not None
    with monkeypatch.context() as patch:
        patch.setattr(files_module, "write_all", _failing_writes(first.session_file, failures))
        failed = await runtime.run("second", session_id=session_id)
    assert not failed.ok
    assert failed.error is not None and failed.error.kind == "plugin"
    # the turn end's flush failed first; when the session's check-in after the run fails
    # too (the disk still full), that is the error reported
    where = "session check-in (flush)" if failures > 3 else "turn-end flush"
    assert f"{where} of session {session_id}" in failed.error.message
    assert "No space left on device" in failed.error.message
    assert failed.attempts == 1  # not a model failure: no other model was tried
    third = await runtime.run("third", session_id=session_id)
    assert third.ok
    await runtime.aclose()
    assert third.session_file is not None
    records = _records(third.session_file)
    ids = {record["id"] for record in records}
    assert len(ids) == len(records)  # nothing written twice
    assert all(r.get("parentId") in ids for r in records[1:] if r.get("parentId") is not None)
    prompts = [
        r["message"]["content"]
        for r in records
        if r.get("type") == "message" and r["message"]["role"] == "user"
    ]
    assert prompts == ["first", "second", "third"]  # the failed run's turn is on disk


async def test_lines_a_failed_check_in_kept_are_written_by_a_later_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The disk stays full for two runs: the session is kept open with its lines (not
    dropped at the failed check-in), the second run's reopening reports the session's
    error, and the first run after the disk has room writes every line once."""
    runtime = _runtime(tmp_path)
    session_id = uuid.uuid4().hex
    first = await runtime.run("first", session_id=session_id)
    assert first.ok and first.session_file is not None
    with monkeypatch.context() as patch:
        patch.setattr(files_module, "write_all", _failing_writes(first.session_file, 10**6))
        second = await runtime.run("second", session_id=session_id)
        third = await runtime.run("third", session_id=session_id)
    assert second.error is not None and third.error is not None
    assert f"check-in (flush) of session {session_id}" in second.error.message
    assert f"reopening session {session_id}" in third.error.message
    assert (await runtime.run("fourth", session_id=session_id)).ok
    await runtime.aclose()
    records = _records(first.session_file)
    ids = [record["id"] for record in records]
    assert len(set(ids)) == len(ids)
    prompts = [
        r["message"]["content"]
        for r in records
        if r.get("type") == "message" and r["message"]["role"] == "user"
    ]
    assert prompts == ["first", "second", "fourth"]  # "third" never started
