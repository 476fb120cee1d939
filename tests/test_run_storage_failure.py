"""A failure of the runtime's own storage ends the run with an error, not a raw ``OSError``.

The embedded lanes, session index and session files live under ``state_dir``; they are not a
plugin's, so nothing wrapped their ``OSError`` (a full disk, a permission, a file where a
folder should be) and it escaped ``Runtime.run`` as the bare exception. It now ends the run
like a plugin backend's failure (``error.kind`` ``plugin``, ``run_end`` with the error, a
reply payload that says what failed), and after the answer (the lane release) it is a cleanup
failure: the answer stands. Timeouts (also ``OSError`` subclasses) are not storage failures.
Real HTTP (``FaultInjectingOpenAIServer``), real files, on asyncio and trio.
"""

from __future__ import annotations

import errno
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import filelock
import pytest

from openclaw_runtime import Runtime
from openclaw_runtime._exceptions import PluginBackendError
from openclaw_runtime.events import Event
from openclaw_runtime.providers.http import IdleTimeout
from openclaw_runtime.runner import file_lanes
from openclaw_runtime.runner.attempt import AttemptTimeout
from openclaw_runtime.runner.file_lane_policy import FileLaneClaimant
from openclaw_runtime.runner.run import _lone_backend_error
from openclaw_runtime.runner.run_result import storage_failure
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply
from tests.run_support import mock_openai_config

ANSWER = "The CI config lives in .github/workflows/ci.yml."
SECRET = "sk-" + "a1B2c3D4e5" * 4


# --------------------------------------------------------------------------- the policy


@pytest.mark.parametrize(
    "exc",
    [
        OSError(errno.ENOSPC, "No space left on device"),
        NotADirectoryError(errno.ENOTDIR, "Not a directory", "/state/lanes/x.json.lock"),
        PermissionError(errno.EACCES, "Permission denied", "/state/sessions/index.json"),
        FileNotFoundError(errno.ENOENT, "No such file or directory", "/state/lanes"),
        IsADirectoryError(errno.EISDIR, "Is a directory", "/state/sessions/s1.jsonl"),
    ],
    ids=lambda exc: type(exc).__name__,
)
def test_an_os_error_is_a_storage_failure_naming_the_file(exc: OSError) -> None:
    error = storage_failure(exc)
    assert isinstance(error, PluginBackendError)
    assert error.plugin_name is None  # no plugin to blame: the embedded storage
    assert str(error) == f"the runtime's storage failed: {type(exc).__name__}: {exc}"
    assert error.__cause__ is exc
    if exc.filename:
        assert exc.filename in str(error)


@pytest.mark.parametrize(
    "exc",
    [
        TimeoutError("timed out"),
        filelock.Timeout("/state/lanes/x.json.lock"),  # a TimeoutError, so an OSError
        IdleTimeout("no bytes for 30 s"),
        AttemptTimeout(30.0),
        ValueError("not an OSError"),
        PluginBackendError("already the run's error"),
        KeyboardInterrupt(),
    ],
    ids=lambda exc: type(exc).__name__,
)
def test_timeouts_and_other_errors_are_not_storage_failures(exc: BaseException) -> None:
    assert storage_failure(exc) is None


def test_a_storage_failure_hides_a_secret() -> None:
    error = storage_failure(OSError(errno.EIO, f"I/O error near {SECRET}"))
    assert error is not None
    assert SECRET not in str(error) and "I/O error" in str(error)


def test_a_task_group_holding_one_storage_failure_is_that_failure() -> None:
    leaf = OSError(errno.ENOSPC, "No space left on device")
    nested = BaseExceptionGroup("outer", [BaseExceptionGroup("inner", [leaf])])
    error = _lone_backend_error(nested)
    assert isinstance(error, PluginBackendError) and error.__cause__ is leaf
    # two failures, or a timeout, are not one storage failure: raised as they are
    assert _lone_backend_error(BaseExceptionGroup("two", [leaf, ValueError("x")])) is None
    assert _lone_backend_error(BaseExceptionGroup("t", [TimeoutError("t")])) is None


# --------------------------------------------------------------------------- runs


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as running:
        yield running


def make_runtime(state: Path, server: FaultInjectingOpenAIServer) -> Runtime:
    runtime = Runtime(
        mock_openai_config(state, server, timeout_seconds=20),
        load_entrypoints=False,
        on_load_failure="raise",
    )
    runtime.retry_backoff_scale = 0
    return runtime


def block_with_a_file(path: Path) -> None:
    """Put a plain file where the runtime expects the folder ``path``."""
    shutil.rmtree(path)
    path.write_text("not a folder")


@pytest.mark.anyio
async def test_a_broken_lanes_folder_ends_the_run_with_an_error_and_loses_nothing(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    state = tmp_path / "state"
    runtime = make_runtime(state, server)
    try:
        server.enqueue(Reply(text=ANSWER))
        first = await runtime.run("where is the CI config?", session_id="s1")
        assert first.ok, first.error
        before = (state / "sessions" / "s1.jsonl").read_bytes()
        requests = len(server.requests)

        block_with_a_file(state / "lanes")
        events: list[Event] = []
        failed = await runtime.run("and the linter?", session_id="s1", on_event=events.append)

        assert not failed.ok and failed.outcome.status == "error"
        assert failed.error is not None and failed.error.kind == "plugin"
        assert failed.error.message.startswith("the runtime's storage failed: NotADirectoryError: ")
        assert str(state / "lanes") in failed.error.message  # the file the system named
        assert [p.is_error for p in failed.payloads] == [True]
        assert failed.error.message in (failed.payloads[0].text or "")
        types = [e.type for e in events]
        assert types[0] == "run_start" and types.count("run_end") == 1
        assert types[-1] == "run_end"
        assert events[-1].error == failed.error.to_dict()  # type: ignore[attr-defined]
        # nothing was sent and nothing of the session changed
        assert len(server.requests) == requests
        assert (state / "sessions" / "s1.jsonl").read_bytes() == before

        (state / "lanes").unlink()  # the folder is fixed: the same runtime runs again
        server.enqueue(Reply(text="ruff."))
        again = await runtime.run("and the linter?", session_id="s1")
        assert again.ok, again.error
        assert again.text == "ruff."
    finally:
        await runtime.aclose()


@pytest.mark.anyio
async def test_a_broken_sessions_folder_fails_the_index_lookup_as_an_error(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    state = tmp_path / "state"
    runtime = make_runtime(state, server)
    try:
        server.enqueue(Reply(text=ANSWER))
        assert (await runtime.run("hi", session_key="chat:1")).ok
        block_with_a_file(state / "sessions")
        events: list[Event] = []
        failed = await runtime.run("hi again", session_key="chat:1", on_event=events.append)
        assert not failed.ok
        assert failed.error is not None and failed.error.kind == "plugin"
        assert "NotADirectoryError" in failed.error.message
        assert str(state / "sessions") in failed.error.message
        assert [e.type for e in events].count("run_end") == 1
    finally:
        await runtime.aclose()


@pytest.mark.anyio
async def test_a_lane_release_that_fails_after_the_answer_keeps_the_answer(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    runtime = make_runtime(tmp_path / "state", server)

    def full_disk(self: Any, lane: str, claim_id: str, lock_wait_s: float = -1) -> bool:
        raise OSError(errno.ENOSPC, "No space left on device")

    try:
        server.enqueue(Reply(text=ANSWER))
        monkeypatch.setattr(file_lanes.FileLaneStore, "release", full_disk)
        with caplog.at_level(logging.WARNING):
            result = await runtime.run("where is the CI config?", session_id="s1")
    finally:
        monkeypatch.undo()
        await runtime.aclose()
    assert result.ok, result.error
    assert result.text == ANSWER
    assert any(
        "after the run ended" in r.getMessage() and "No space left" in r.getMessage()
        for r in caplog.records
    )


# --------------------------------------------------------------------------- the lane store


@pytest.mark.parametrize("expect_new", [True, False])
def test_a_lane_store_makes_its_folder_again_when_it_was_removed(
    tmp_path: Path, expect_new: bool
) -> None:
    """A store remembers that it made its folder; removed since (a clean-up, a repair), the
    next claim made it again instead of failing every later run with FileNotFoundError."""
    folder = tmp_path / "lanes"
    store = file_lanes.FileLaneStore(folder)
    claimant = FileLaneClaimant("c1", 1, store.host, None)
    step = store.step("session:s1", claimant, 1, expect_new=True)
    assert step is not None and step.granted
    assert store.release("session:s1", "c1")
    shutil.rmtree(folder)

    again = FileLaneClaimant("c2", 1, store.host, None)
    step = store.step("session:s1", again, 1, expect_new=expect_new)
    assert step is not None and step.granted
    assert store.read("session:s1").holders[0].id == "c2"
    assert store.release("session:s1", "c2")


def test_a_lane_store_whose_folder_is_a_file_raises_once(tmp_path: Path) -> None:
    """Not made again (it is there, as the wrong thing): the system's error, once."""
    folder = tmp_path / "lanes"
    store = file_lanes.FileLaneStore(folder)
    claimant = FileLaneClaimant("c1", 1, store.host, None)
    assert store.step("session:s1", claimant, 1, expect_new=True) is not None
    assert store.release("session:s1", "c1")
    block_with_a_file(folder)
    with pytest.raises(NotADirectoryError):
        store.step("session:s1", claimant, 1, expect_new=True)
