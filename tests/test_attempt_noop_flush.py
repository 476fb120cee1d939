"""The attempt's closing flush is skipped for a memory session (``flush_is_noop``), and the
run's session check-in goes without a shielded scope when it reaches no checkpoint
(``checkin_never_suspends``: the session and every one the check-in closes are memory
sessions, whose ``flush`` and ``aclose`` await nothing): a shielded scope around code that
never suspends changed nothing. Runs that end normally, time out, are cancelled by their
caller or aborted end the same way (results, events, transcript) as with both scopes, on
asyncio and trio; ``closed_by_checkin`` names exactly what ``checkin_session`` closes."""

from __future__ import annotations

import dis
import random
import types
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from openclaw_runtime import Runtime, hookimpl
from openclaw_runtime.events import AssistantMessageEventStream, Done
from openclaw_runtime.messages import AssistantMessage, TextContent
from openclaw_runtime.runner import attempt as attempt_module
from openclaw_runtime.runner import run as run_module
from openclaw_runtime.runner.checkin import check_in_session, checkin_never_suspends
from openclaw_runtime.transcript.append import SessionWriter
from openclaw_runtime.transcript.memory import MemorySession, aclose_is_noop, flush_is_noop

pytestmark = pytest.mark.anyio

MODEL = {"id": "m1", "api": "noop-flush", "provider": "fake", "contextWindow": 1_000_000}


def _answer(text: str) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)],
        api="noop-flush",
        provider="fake",
        model="m1",
        stop_reason="stop",
    )


def _stream(delay: float) -> Any:
    def stream(model: Any, context: Any, options: Any) -> Any:
        async def events() -> Any:
            signal = options.signal
            waited = 0.0
            while waited < delay:  # a model call that notices an abort, as providers do
                if signal is not None and signal.aborted:
                    raise RuntimeError("aborted")
                await anyio.sleep(0.005)
                waited += 0.005
            yield Done("stop", _answer(f"answer {len(context.messages)}"))

        return AssistantMessageEventStream(events())

    return stream


def _runtime(tmp_path: Path, delay: float) -> Runtime:
    class Provider:
        @hookimpl
        def register_providers(self, register: Any) -> None:
            register("noop-flush", _stream(delay))

    return Runtime(
        {"state_dir": str(tmp_path), "models": [MODEL], "agent": {"model": "fake/m1"}},
        plugins=[("noop-flush-provider", Provider())],
        load_entrypoints=False,
        env={},
        memory=True,
    )


def _shape(value: Any) -> Any:
    """What must be the same on both sides (ids and times differ run to run)."""
    if isinstance(value, AssistantMessage | dict) or hasattr(value, "role"):
        role = getattr(value, "role", None)
        content = getattr(value, "content", None)
        text = (
            content
            if isinstance(content, str)
            else [getattr(block, "text", type(block).__name__) for block in content or ()]
        )
        return (role, text, getattr(value, "stop_reason", None))
    return value


async def _scenario(tmp_path: Path, kind: str) -> Any:
    runtime = _runtime(tmp_path, 0.0 if kind == "ok" else 30.0)
    session_id = uuid.uuid4().hex
    kinds: list[str] = []

    def on_event(event: Any) -> None:
        kinds.append(event.type)

    result: Any = None
    if kind == "ok":
        result = await runtime.run("hi", session_id=session_id, on_event=on_event)
    elif kind == "timeout":
        result = await runtime.run("hi", session_id=session_id, timeout_s=0.05, on_event=on_event)
    elif kind == "cancelled":
        with anyio.move_on_after(0.05):
            await runtime.run("hi", session_id=session_id, on_event=on_event)
    else:  # aborted through the run's live handle

        async def abort_soon() -> None:
            await anyio.sleep(0.05)
            assert await runtime.abort_run(session_id=session_id, reason="stop")

        async with anyio.create_task_group() as tg:
            tg.start_soon(abort_soon)
            result = await runtime.run("hi", session_id=session_id, on_event=on_event)
    # the next run of the same session (its model slow only for the first) sees what the
    # first one left
    follow = await runtime.run("again", session_id=session_id, timeout_s=0.05)
    shape: list[Any] = [kinds]
    for item in (result, follow):
        if item is None:
            shape.append(None)
            continue
        shape.append(
            (
                item.outcome.status,
                item.outcome.stop_reason,
                None if item.error is None else item.error.kind,
                [(p.text, p.is_error) for p in item.payloads],
                [_shape(m) for m in item.messages],
            )
        )
    store = runtime.services.session_store
    session = await store.open(session_id)
    shape.append([_shape(m) for m in session.build_session_context().messages])
    await runtime.aclose()
    return shape


@pytest.mark.parametrize("kind", ["ok", "timeout", "cancelled", "aborted"])
async def test_runs_end_as_with_the_shielded_flush(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = await _scenario(tmp_path / "fast", kind)
    monkeypatch.setattr(attempt_module, "flush_is_noop", lambda session: False)
    monkeypatch.setattr(run_module, "checkin_never_suspends", lambda run, session: False)
    shielded = await _scenario(tmp_path / "shielded", kind)
    assert fast == shielded
    if kind == "ok":
        assert fast[1][0] == "ok"


@pytest.mark.parametrize("method", [MemorySession.flush, MemorySession.aclose])
def test_a_memory_flush_and_close_never_suspend(method: Any) -> None:
    # the premise: no await, no yield in them
    ops = {ins.opname for ins in dis.get_instructions(method)}
    assert not ops & {"GET_AWAITABLE", "YIELD_VALUE", "SEND", "GET_AITER", "GET_ANEXT"}


def test_only_the_memory_flush_counts_as_a_noop() -> None:
    class Kept(MemorySession):
        pass

    class Flushing(MemorySession):
        async def flush(self) -> None:
            await anyio.lowlevel.checkpoint()

    assert flush_is_noop(MemorySession.__new__(MemorySession))
    assert flush_is_noop(Kept.__new__(Kept))
    assert not flush_is_noop(Flushing.__new__(Flushing))
    assert not flush_is_noop(SessionWriter.__new__(SessionWriter))
    assert not flush_is_noop(object())


async def test_the_attempt_skips_the_scope_only_for_a_noop_flush(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[bool] = []
    real = attempt_module.flush_is_noop

    def spy(session: Any) -> bool:
        answer = real(session)
        asked.append(answer)
        return answer

    monkeypatch.setattr(attempt_module, "flush_is_noop", spy)
    runtime = _runtime(tmp_path, 0.0)
    result = await runtime.run("hi", session_id=uuid.uuid4().hex)
    assert result.ok and asked == [True]
    await runtime.aclose()


class _Slow:
    """A session whose ``flush`` and ``aclose`` suspend (a file or plugin session's would)."""

    def __init__(self, session_id: str, closed: list[Any]) -> None:
        self.session_id = session_id
        self._closed = closed

    async def flush(self) -> None:
        await anyio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        self._closed.append(self)
        await anyio.lowlevel.checkpoint()


@pytest.mark.parametrize("seed", range(60))
async def test_closed_by_checkin_names_what_the_checkin_closes(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    runtime = _runtime(tmp_path, 0.0)
    services = runtime.services
    closed: list[Any] = []
    kept: OrderedDict[str, Any] = OrderedDict()
    for n in range(rng.randint(0, 5)):
        kept[f"s{n}"] = _Slow(f"s{n}", closed)
    services._open = kept
    services.max_open_sessions = rng.randint(0, 5)
    choice = rng.random()
    if choice < 0.3 and kept:
        session = kept[rng.choice(list(kept))]  # the same handle again
    elif choice < 0.6 and kept:
        session = _Slow(rng.choice(list(kept)), closed)  # another handle of a kept id
    else:
        session = _Slow("new", closed)
    expected = services.closed_by_checkin(session)
    await services.checkin_session(session)
    assert closed == expected
    await runtime.aclose()


@pytest.mark.parametrize("seed", range(40))
async def test_a_checkin_said_not_to_suspend_never_does(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    runtime = _runtime(tmp_path, 0.0)
    services = runtime.services
    store = services.session_store
    closed: list[Any] = []

    async def memory(session_id: str) -> Any:
        return await store.open_or_create(session_id, cwd=str(tmp_path))

    kept: OrderedDict[str, Any] = OrderedDict()
    for n in range(rng.randint(0, 4)):
        kept[f"s{n}"] = await memory(f"s{n}") if rng.random() < 0.7 else _Slow(f"s{n}", closed)
    services._open = kept
    services.max_open_sessions = rng.randint(0, 4)
    session = await memory("new") if rng.random() < 0.8 else _Slow("new", closed)
    run = types.SimpleNamespace(services=services)
    answer = checkin_never_suspends(run, session)  # type: ignore[arg-type]
    would_close = services.closed_by_checkin(session)
    assert answer == (
        flush_is_noop(session) and all(aclose_is_noop(other) for other in would_close)
    )
    coro = check_in_session(run, session)  # type: ignore[arg-type]
    try:
        coro.send(None)
    except StopIteration:
        suspended = False
    else:
        suspended = True
        coro.close()
    if answer:
        assert not suspended  # finished at the first step: no checkpoint reached
    else:
        assert suspended  # what it closes or flushes did reach one
    await runtime.aclose()
