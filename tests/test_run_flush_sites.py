"""Every flush the runner does fails like the turn-end flush (flush8): a failed flush of a
session is the run's error (``kind="plugin"``) naming the session and what was being done,
its lines stay buffered, and the next run on the session writes each of them once.

Before: the compaction, truncation, thinking-strip, refusal and ``finalize_steer`` flushes
raised the store's own ``OSError`` out of ``Runtime.run``, and ``Runtime.compact_session``
raised a bare ``OSError`` (its session then closed with the lines). The failure is injected
into one flush, chosen by the runner function that asked for it (``_flush_of``), through a
failing ``_files.write_all`` (the real write path, as tests/test_run_flush_failure.py does).
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import OpenClawRuntimeError, Runtime, hookimpl
from openclaw_runtime import _files as files_module
from openclaw_runtime._exceptions import PluginBackendError
from openclaw_runtime.events import AssistantMessageEventStream, Done, Error
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
)
from openclaw_runtime.runner import RunResult
from openclaw_runtime.runner.checkin import SessionUser, session_flush_error
from openclaw_runtime.transcript.append import SessionWriter
from openclaw_runtime.transcript.jsonl import session_lock

pytestmark = pytest.mark.anyio

WINDOW = 32_000
MODEL = {"id": "m1", "api": "flush-sites", "provider": "fake", "contextWindow": WINDOW}
SIGNATURE_REJECTED = "messages.1.content.0: thinking block signature is invalid"


@dataclass
class _Script:
    """What the fake model answers: thinking blocks on the first answer, a rejected
    thinking signature once, else a short text."""

    thinking_first: bool = False
    reject_signature: int = 0
    calls: list[int] = field(default_factory=list)

    def stream(self, model: Any, context: Any, options: Any) -> Any:
        self.calls.append(len(context.messages))

        async def events() -> Any:
            content: list[Any] = [TextContent(text=f"answer {len(context.messages)}")]
            if self.thinking_first and len(self.calls) == 1:
                content.insert(0, ThinkingContent(thinking="hmm", thinking_signature="sig"))
            if self.reject_signature and len(self.calls) > 1:
                self.reject_signature -= 1
                failed = AssistantMessage(
                    api="flush-sites",
                    provider="fake",
                    model="m1",
                    stop_reason="error",
                    error_message=SIGNATURE_REJECTED,
                )
                yield Error("error", failed)
                return
            answer = AssistantMessage(
                content=content, api="flush-sites", provider="fake", model="m1", stop_reason="stop"
            )
            yield Done("stop", answer)

        return AssistantMessageEventStream(events())


class _Provider:
    def __init__(self, script: _Script) -> None:
        self.script = script

    @hookimpl
    def register_providers(self, register: Any) -> None:
        register("flush-sites", self.script.stream)


def _runtime(tmp_path: Path, script: _Script) -> Runtime:
    return Runtime(
        {"state_dir": str(tmp_path), "models": [MODEL], "agent": {"model": "fake/m1"}},
        plugins=[("flush-sites-provider", _Provider(script))],
        load_entrypoints=False,
        env={},
    )


class _FailingFlush:
    """``SessionWriter.flush`` whose write fails (ENOSPC) ``times`` times when the runner
    function ``site`` asked for it (the first caller outside ``runner/checkin.py``)."""

    def __init__(self, site: str, times: int = 1) -> None:
        self.site, self.left, self.failed = site, times, 0
        self.failing = False
        self.only_inode: int | None = None  # a disk full for this file only (not the lanes')
        self.real_flush = SessionWriter.flush
        self.real_write = files_module.write_all

    def install(self, patch: pytest.MonkeyPatch) -> None:
        patch.setattr(SessionWriter, "flush", self.flush)
        patch.setattr(files_module, "write_all", self.write_all)

    def write_all(self, fd: int, data: bytes) -> None:
        if self.failing and self.only_inode in (None, os.fstat(fd).st_ino):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.real_write(fd, data)

    def flush_of(self) -> str:
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename.endswith("checkin.py"):
            frame = frame.f_back  # type: ignore[assignment]
        return frame.f_code.co_name if frame is not None else ""

    @property
    def flush(self) -> Any:
        outer = self

        async def flush(session: SessionWriter) -> None:
            if outer.left > 0 and outer.flush_of() == outer.site and session._pending:
                outer.left -= 1
                outer.failed += 1
                outer.failing = True
                try:
                    await outer.real_flush(session)
                finally:
                    outer.failing = outer.only_inode is not None
                return
            await outer.real_flush(session)

        return flush


def _records(path: str) -> list[dict[str, Any]]:
    with open(path, "rb") as handle:
        return [json.loads(line) for line in handle.read().splitlines()]


def _assert_written_once(path: str) -> list[dict[str, Any]]:
    records = _records(path)
    ids = [record["id"] for record in records]
    assert len(set(ids)) == len(ids)  # nothing written twice
    known = set(ids)
    assert all(r["parentId"] in known for r in records[1:] if r.get("parentId") is not None)
    return records


def _user_texts(records: list[dict[str, Any]]) -> list[str]:
    texts = []
    for r in records:
        if r.get("type") == "message" and r["message"]["role"] == "user":
            content = r["message"]["content"]
            texts.append(content if isinstance(content, str) else content[0]["text"])
    return texts


async def _seed_tool_result(runtime: Runtime, session_id: str, chars: int) -> None:
    """A tool call and its (large) result appended as another writer would."""
    store = runtime.services.session_store
    session = await store.open_or_create(session_id, cwd=os.getcwd())
    call = ToolCall(id="call-1", name="read", arguments={"path": "x"})
    await session.append_message(
        AssistantMessage(
            content=[call], api="flush-sites", provider="fake", model="m1", stop_reason="toolUse"
        )
    )
    await session.append_message(
        ToolResultMessage(
            tool_call_id="call-1", tool_name="read", content=[TextContent(text="y" * chars)]
        )
    )
    await session.flush()
    await session.aclose()


@dataclass(frozen=True)
class _Site:
    site: str  # the runner function whose flush fails
    phase: str  # what the run's error says was being done
    script: dict[str, Any] = field(default_factory=dict)
    # the prompt is written before the failing flush (compaction and truncation come first)
    prompt_kept: bool = True


SITES = {
    "refusal": _Site("_refuse_oversized_prompt", "prompt refusal"),
    "compaction": _Site("compact", "compaction", prompt_kept=False),
    "truncation": _Site(
        "truncate_oversized_tool_results_in_session", "tool-result truncation", prompt_kept=False
    ),
    "thinking": _Site(
        "strip_thinking_in_run_session",
        "thinking-strip",
        {"thinking_first": True, "reject_signature": 1},
    ),
    "finalize_steer": _Site("steer_before_finalize", "queued-message"),
}


async def _failed_run(
    runtime: Runtime, name: str, session_id: str, first: RunResult, patch: pytest.MonkeyPatch
) -> tuple[Any, str]:
    """Set the session up for site ``name``, run the turn whose flush fails; (result, the
    failed run's prompt as it should stand in the file)."""
    site = SITES[name]
    prompt = f"second {name}"
    if name == "refusal":
        prompt = "x" * (WINDOW * 8)
    elif name == "compaction":  # the third such turn compacts first (preemptive)
        for turn in range(2):
            assert (await runtime.run(f"big {turn} " + "z" * 30_000, session_id=session_id)).ok
        prompt = "big 2 " + "z" * 30_000
    elif name == "truncation":
        await _seed_tool_result(runtime, session_id, WINDOW * 3)
    on_event = None
    if name == "finalize_steer":
        sent: list[Any] = []
        other = _runtime(runtime.config.state_dir, _Script())  # another process's runtime

        async def on_event(event: Any) -> None:
            # the kernel made its last drain: the message waits in the run's inbox
            if event.type == "agent_end" and not sent:
                sent.append(await other.follow_up("and then", session_id=session_id))

    failing = _FailingFlush(site.site)
    failing.install(patch)
    try:
        result = await runtime.run(prompt, session_id=session_id, on_event=on_event)
    except BaseException as exc:  # what escaped the run: the assertion below shows it
        result = exc
    assert failing.failed == 1, f"the {site.site} flush never ran"
    return result, prompt


@pytest.mark.parametrize("name", sorted(SITES))
async def test_a_failed_runner_flush_is_the_runs_error_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    site = SITES[name]
    runtime = _runtime(tmp_path, _Script(**site.script))
    session_id = uuid.uuid4().hex
    first = await runtime.run("first", session_id=session_id)
    assert first.ok and first.session_file is not None
    with monkeypatch.context() as patch:
        failed, prompt = await _failed_run(runtime, name, session_id, first, patch)
    assert isinstance(failed, RunResult), repr(failed)
    assert not failed.ok and failed.error is not None
    assert failed.error.kind == "plugin"
    assert f"{site.phase} flush of session {session_id}" in failed.error.message
    assert "No space left on device" in failed.error.message
    assert "stay buffered" in failed.error.message
    later = await runtime.run("later", session_id=session_id)
    assert later.ok, later.error
    await runtime.aclose()
    records = _assert_written_once(first.session_file)
    texts = _user_texts(records)
    assert texts[0] == "first" and texts[-1] == "later"
    assert (prompt in texts) == site.prompt_kept  # the failed run's prompt is on disk, once
    # what the failed flush kept is on disk too
    if name == "compaction":
        assert [r["type"] for r in records].count("compaction") == 1
    if name == "truncation":
        results = [r for r in records if r.get("message", {}).get("role") == "toolResult"]
        assert len(results) == 2  # the seeded one and its truncated rewrite
        assert len(json.dumps(results[1])) < len(json.dumps(results[0]))


@pytest.mark.parametrize("disk_full", [False, True])
async def test_a_failed_compact_session_flush_names_the_session_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, disk_full: bool
) -> None:
    """``Runtime.compact_session`` (no run): the store's error naming the session, an
    ``OpenClawRuntimeError``; the compaction's lines are written by the next run, also when
    every write fails until ``compact_session`` returns (closing the session then would
    lose them)."""
    runtime = _runtime(tmp_path, _Script())
    session_id = uuid.uuid4().hex
    for turn in range(5):
        seeded = await runtime.run(f"turn {turn} " + "z" * 10_000, session_id=session_id)
        assert seeded.ok
    later_file = seeded.session_file
    with monkeypatch.context() as patch:
        failing = _FailingFlush("compact_session_queued")
        failing.install(patch)
        if disk_full:
            assert later_file is not None
            failing.failing, failing.only_inode = True, os.stat(later_file).st_ino
        with pytest.raises(OpenClawRuntimeError) as raised:
            await runtime.compact_session(session_id=session_id)
    message = str(raised.value)
    assert f"compaction flush of session {session_id}" in message, message
    assert "No space left on device" in message
    later = await runtime.run("later", session_id=session_id)
    assert later.ok, later.error
    await runtime.aclose()
    assert later.session_file is not None
    records = _assert_written_once(later.session_file)
    assert any(r.get("type") == "compaction" for r in records)
    assert _user_texts(records)[-1] == "later"


def _disk_full_for(patch: pytest.MonkeyPatch, session_file: str) -> _FailingFlush:
    """Every write to ``session_file`` fails (ENOSPC), whichever flush makes it."""
    failing = _FailingFlush("nowhere")
    failing.install(patch)
    failing.failing, failing.only_inode = True, os.stat(session_file).st_ino
    return failing


@contextlib.contextmanager
def _lock_held_elsewhere(session_file: str) -> Iterator[None]:
    """The session's write lock held by another thread (another writer, say; the lock is
    re-entrant within a thread)."""
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with session_lock(session_file, timeout=5):
            taken.set()
            done.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert taken.wait(5)
        yield
    finally:
        done.set()
        holder.join()


async def test_a_kept_session_whose_reopening_fails_keeps_its_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed check-in keeps the session open with its lines; when the next checkout's
    ``refresh`` cannot write them (here: their lock not had in time, an
    ``OpenClawRuntimeError``), the session is closed and opened again, and that close's
    flush fails the same way. The session is kept with its lines (it was dropped with them)
    and the run's error names the session; the next run writes them."""
    runtime = _runtime(tmp_path, _Script())
    session_id = uuid.uuid4().hex
    first = await runtime.run("first", session_id=session_id)
    assert first.ok and first.session_file is not None
    with monkeypatch.context() as patch:
        _disk_full_for(patch, first.session_file)
        second = await runtime.run("second", session_id=session_id)
    assert second.error is not None and "check-in (flush)" in second.error.message
    kept = runtime.services._open[session_id]
    kept.lock_timeout = 0.05  # type: ignore[attr-defined]
    with _lock_held_elsewhere(first.session_file):
        third = await runtime.run("third", session_id=session_id)
    assert third.error is not None and third.error.kind == "plugin"
    assert f"reopening session {session_id}" in third.error.message
    assert runtime.services._open.get(session_id) is kept
    assert (await runtime.run("fourth", session_id=session_id)).ok
    await runtime.aclose()
    records = _assert_written_once(first.session_file)
    assert _user_texts(records) == ["first", "second", "fourth"]  # "third" never started


def test_a_flush_error_names_the_session_and_phase_and_masks_secrets() -> None:
    """A key in the store's text never reaches the run's error (the embedded store: no
    plugin, no fault recorded). Two layers mask it: ``redact_secret_text`` and the
    redacting ``OpenClawRuntimeError`` constructor; removing either alone passes."""
    secret = "sk-ant-api03-" + "k" * 40
    services = type("Services", (), {"session_store": object()})()
    user = SessionUser(services, None, "s-1")
    error = session_flush_error(user, OSError(5, f"EIO writing with {secret}"), "compaction")
    message = str(error)
    assert isinstance(error, PluginBackendError) and isinstance(error, OpenClawRuntimeError)
    assert "compaction flush of session s-1 (its entries stay buffered" in message
    assert "OSError" in message and secret not in message and "sk-ant-api03" not in message


async def test_compact_session_writes_what_a_failed_check_in_kept_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``compact_session`` takes the session a run kept (not a second one on the same file):
    while the lines a failed check-in kept cannot be written, it raises the run's
    "reopening session" error (an ``OpenClawRuntimeError``, was the bare ``OSError``)."""
    runtime = _runtime(tmp_path, _Script())
    session_id = uuid.uuid4().hex
    first = await runtime.run("first", session_id=session_id)
    assert first.ok and first.session_file is not None
    with monkeypatch.context() as patch:
        _disk_full_for(patch, first.session_file)
        second = await runtime.run("second", session_id=session_id)
        with pytest.raises(OpenClawRuntimeError) as raised:
            await runtime.compact_session(session_id=session_id)
    assert second.error is not None and "check-in (flush)" in second.error.message
    assert f"reopening session {session_id}" in str(raised.value)
    assert "No space left on device" in str(raised.value)
    await runtime.compact_session(session_id=session_id)
    assert (await runtime.run("later", session_id=session_id)).ok
    await runtime.aclose()
    records = _assert_written_once(first.session_file)
    assert _user_texts(records) == ["first", "second", "later"]


async def test_a_failed_compaction_timeout_restore_flush_is_the_runs_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compaction-timeout restore (the run's timeout hit during a compaction that moved
    the branch) flushes the leaf move through the same helper; no end-to-end row (it needs
    the run timeout to land inside the compaction), so it is called directly."""
    from openclaw_runtime.messages import UserMessage  # lazy: this test only
    from openclaw_runtime.runner.compaction_lifecycle import PreCompactionSnapshot  # lazy: same

    runtime = _runtime(tmp_path, _Script())
    session_id = uuid.uuid4().hex
    assert (await runtime.run("first", session_id=session_id)).ok
    session = await runtime.services.checkout_session(session_id, cwd=os.getcwd())
    snapshot = PreCompactionSnapshot.capture(session, lambda: False)
    await session.append_message(UserMessage(content="written by the compaction"))
    await session.flush()
    user = SessionUser(runtime.services, runtime.hooks, session_id)
    with monkeypatch.context() as patch:
        _FailingFlush("restore_after_timeout").install(patch)
        with pytest.raises(PluginBackendError) as raised:
            await snapshot.restore_after_timeout(session, run=user)
    assert f"compaction-timeout restore flush of session {session_id}" in str(raised.value)
    await runtime.services.checkin_session(session)  # the disk has room again: written
    await runtime.aclose()
    records = _assert_written_once(str(session.path))
    assert records[-1]["type"] != "message"  # the leaf move (a branch entry) is on disk
