"""A recorded message's models are made when they are read, once.

An append joins the entry to the session's cached context without making the session's model
of its message (``SessionReader._record``); the next read of the context makes the models of
everything appended since, in order (``_materialize``), and later reads hand out the same
objects. A run's end reads its own messages' wire dicts for its payloads and facts, and
``RunResult.messages`` parses them (never the session's models) when first read, so a run
whose session and result messages are not read makes no model of its messages. A run with no ``before_agent_finalize`` plugin does not
gather the session's messages for it. Each table compares the lazy path with the context
built from scratch (every message parsed again).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime._markers import hookimpl
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.runner import finalize as finalize_module
from openclaw_runtime.runner import run_models
from openclaw_runtime.runner.run_models import RunEntryModels
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply
from openclaw_runtime.transcript import reader
from openclaw_runtime.transcript.memory import MemorySessionStore
from openclaw_runtime.transcript.session_context import entry_message
from openclaw_runtime.transcript.store import JsonlSessionStore
from tests.run_support import mock_openai_config, mock_openai_server, read
from tests.test_record_fast_paths import _cached, _plain, _random_step

pytestmark = pytest.mark.anyio


class _Counting:
    """``entry_message`` that counts its calls (and can fail on the n-th)."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.calls = 0
        self.fail_at = fail_at

    def __call__(self, entry: Any, **options: Any) -> Any:
        self.calls += 1
        if self.fail_at is not None and self.calls == self.fail_at:
            raise RuntimeError("parse failed")
        return entry_message(entry, **options)


def _store(kind: str, tmp_path: Path) -> Any:
    return MemorySessionStore() if kind == "memory" else JsonlSessionStore(tmp_path / "s")


def _turn(n: int) -> list[Any]:
    call = ToolCall(id=f"c{n}", name="read", arguments={"path": f"f{n}"})
    return [
        AssistantMessage(
            content=[call], api="a", provider="p", model=f"m{n % 2}", stop_reason="toolUse"
        ),
        ToolResultMessage(tool_call_id=f"c{n}", tool_name="read", content=[TextContent(text="r")]),
    ]


@pytest.mark.parametrize("kind", ["memory", "file"])
async def test_appends_make_no_model_until_the_context_is_read(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counting = _Counting()
    monkeypatch.setattr(reader, "entry_message", counting)
    session = await _store(kind, tmp_path).create("lazy", cwd="/w")
    await session.append_message(UserMessage(content="go"))
    first = session.build_session_context().messages
    assert counting.calls == 1
    for n in range(10):
        for message in _turn(n):
            await session.append_message(message)
    assert counting.calls == 1  # ten turns recorded, no model made
    context = session.build_session_context()
    assert counting.calls == 21  # each made once, on the read
    assert context.model is not None and context.model.model_id == "m1"
    again = session.build_session_context().messages
    assert counting.calls == 21
    assert all(a is b for a, b in zip(context.messages, again, strict=True))
    assert context.messages[0] is first[0]
    assert _cached(session) == _plain(session)
    await session.aclose()


@pytest.mark.parametrize("seed", range(8))
async def test_reads_at_random_moments_equal_the_rebuilt_context(seed: int, tmp_path: Path) -> None:
    rng = random.Random(1000 + seed)
    session = await _store("memory" if seed % 2 else "file", tmp_path).create(f"r{seed}", cwd="/w")
    for n in range(150):
        await _random_step(session, rng, n)
        if rng.random() < 0.25:  # long stretches of unread appends, then a read
            assert _cached(session) == _plain(session), n
            first = session.build_session_context().messages
            again = session.build_session_context().messages
            assert all(a is b for a, b in zip(first, again, strict=True)), n
    assert _cached(session) == _plain(session)
    await session.aclose()


async def test_a_failed_parse_drops_the_half_extended_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = await MemorySessionStore().create("fail", cwd="/w")
    await session.append_message(UserMessage(content="go"))
    session.build_session_context()
    for n in range(3):
        for message in _turn(n):
            await session.append_message(message)
    monkeypatch.setattr(reader, "entry_message", _Counting(fail_at=3))
    with pytest.raises(RuntimeError, match="parse failed"):
        session.build_session_context()
    monkeypatch.setattr(reader, "entry_message", entry_message)
    assert _cached(session) == _plain(session)
    assert len(session.build_session_context().messages) == 7


def test_run_entry_models_parse_each_entry_once() -> None:
    models = RunEntryModels()
    wire = _turn(0)[0].to_dict()
    entry = {"type": "message", "id": "e1", "message": wire}
    made = models.message_of(entry)
    assert made == entry_message(entry) and made is not entry_message(entry)
    assert models.message_of(entry) is made
    # the same id in another dict (a tree rebuilt from the file): parsed again
    other = {"type": "message", "id": "e1", "message": dict(wire, model="other")}
    remade = models.message_of(other)
    assert remade is not made and remade.model == "other"
    assert models.message_of(other) is remade
    # no id: nothing to key on, parsed every time
    bare = {"type": "message", "message": wire}
    assert models.message_of(bare) == made and models.message_of(bare) is not models.message_of(
        bare
    )
    excluded = {"type": "message", "id": "e2", "message": dict(wire, excludeFromContext=True)}
    assert models.message_of(excluded) is entry_message(excluded) is None


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with mock_openai_server() as running:
        yield running


class _Judge:
    """A ``before_agent_finalize`` plugin that records the messages it is shown."""

    def __init__(self) -> None:
        self.shown: list[list[Any]] = []

    @hookimpl
    def before_agent_finalize(self, messages: list[Any]) -> None:
        self.shown.append([m.to_dict() for m in messages])


@pytest.mark.parametrize("judged", [False, True], ids=["no-judge", "judge"])
async def test_a_run_parses_each_message_once_and_not_the_sessions(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    judged: bool,
) -> None:
    session_parses, run_parses = _Counting(), _Counting()
    monkeypatch.setattr(reader, "entry_message", session_parses)
    monkeypatch.setattr(run_models, "entry_message", run_parses)
    judge = _Judge()
    config = mock_openai_config(tmp_path / "state", server)
    runtime = Runtime(
        config, load_entrypoints=False, memory=True, plugins=[judge] if judged else []
    )
    for n in range(3):
        server.enqueue(Reply(tool_calls=[("read", {"path": f"f{n}.txt"})]))
    server.enqueue(Reply(text="all read"))
    try:
        result = await runtime.run("read them", session_id="lazy", tools=[read])
        assert result.ok and result.text == "all read"
        # the payloads and facts read the entries' wire dicts: nothing parsed at the end
        assert run_parses.calls == 0
        assert len(result.messages) == 8
        assert run_parses.calls == 8  # the result's messages, made when first read
        assert result.messages is result.messages and run_parses.calls == 8
        # the session made its models only for the judge (which reads its context)
        assert session_parses.calls == (8 if judged else 0)
        session = await runtime.checkout_session("lazy", cwd=str(tmp_path))
        try:
            history = session.build_session_context().messages
        finally:
            await runtime.checkin_session(session)
    finally:
        await runtime.aclose()
    assert session_parses.calls == 8
    for mine, kept in zip(result.messages, history, strict=True):
        assert mine is not kept and type(mine) is type(kept) and mine == kept
        assert mine.model_fields_set == kept.model_fields_set
    if judged:
        assert judge.shown == [[m.to_dict() for m in history]]
        assert judge.shown[0][-1]["content"][0]["text"] == "all read"


async def test_no_judge_means_the_session_is_not_read_for_finalization() -> None:
    class _Unreadable:
        def build_session_context(self) -> Any:
            raise AssertionError("read without a judge")

    class _Hooks:
        finalizes = False

        def before_agent_finalize(self, **kwargs: Any) -> Any:
            raise AssertionError("asked without a judge")

    class _Run:
        hooks = _Hooks()
        run_id = "r"
        session_id = "s"
        session_key = None
        session = _Unreadable()

    answer = await _maybe(
        finalize_module.request_finalize_revision(
            _Run(),
            provider="p",
            model="m",
            last_answer="hi",
            revisions_so_far=0,
            payload_count=1,
        )
    )
    assert answer is None


async def _maybe(value: Any) -> Any:
    return await value if hasattr(value, "__await__") else value
