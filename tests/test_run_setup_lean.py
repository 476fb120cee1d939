"""The run set-up's short forms answer as the long forms they replace (issue 13, run3).

* ``skill_env_scope`` is a small class: with no skill variables it sets nothing (the
  enclosing scope is already what the block sees); with some it does what the generator
  context manager did. A table compares both on nested scopes, raising blocks and reads.
* ``resolve_run_prompt`` passes no fault callback when no plugin section can fail.
* ``history_tokens`` treats a disabled replay checkpointer (memory, Redis) as none: same
  estimates, no recorder closure kept on it.
* a memory session does not resolve a lock-file path (it takes no lock file).
* ``fault_scope`` is a small class: the same deliveries as the generator it replaces.
* a live-run handle makes its end event and its delivered list on first use: a table of
  every order of queueing, draining, offering, asking and closing against a plain model.
"""

from __future__ import annotations

import gc
import itertools
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.containment import PluginGuard, fault_scope
from openclaw_runtime.containment import guard as guard_module
from openclaw_runtime.prompt.skills import current_skill_env, skill_env_scope, subprocess_env
from openclaw_runtime.prompt.skills import env as skill_env
from openclaw_runtime.runner import history_tokens
from openclaw_runtime.runner.history_tokens import estimate_prompt_tokens
from openclaw_runtime.runner.live import LiveRunHandle, LiveRunRegistry
from openclaw_runtime.transcript.memory import MemorySessionStore
from openclaw_runtime.transcript.replay_checkpoint import ReplayCheckpointer
from openclaw_runtime.transcript.store import SessionManager
from tests.run_support import ProbeProvider, probe_config
from tests.test_transcript_incremental import History


@contextmanager
def _generator_scope(overrides: Mapping[str, str]) -> Iterator[Mapping[str, str]]:
    """The form ``skill_env_scope`` had before (the reference)."""
    merged = MappingProxyType({**skill_env._SKILL_ENV.get(), **overrides})
    token = skill_env._SKILL_ENV.set(merged)
    try:
        yield merged
    finally:
        skill_env._SKILL_ENV.reset(token)


_LAYERS: list[dict[str, str]] = [{}, {"A": "1"}, {"A": "2", "B": "x"}, {"B": "y"}]


def _trace(scope: Any, layers: list[dict[str, str]], raise_at: int | None) -> list[Any]:
    """What a stack of nested scopes shows at each level, on the way in and out."""
    seen: list[Any] = []

    def enter(depth: int) -> None:
        if depth == len(layers):
            if raise_at is not None:
                raise KeyError("inner")
            return
        with scope(layers[depth]) as given:
            seen.append(("in", depth, dict(given), dict(current_skill_env())))
            seen.append(("child", depth, subprocess_env({"BASE": "b"})))
            try:
                enter(depth + 1)
            except KeyError:
                seen.append(("raised", depth))
                if raise_at == depth:
                    raise
        seen.append(("out", depth, dict(current_skill_env())))

    try:
        enter(0)
    except KeyError:
        seen.append(("escaped",))
    seen.append(("after", dict(current_skill_env())))
    return seen


_SHAPES = [
    (list(stack), raise_at)
    for depth in range(4)
    for stack in itertools.product(_LAYERS, repeat=depth)
    for raise_at in (None, *range(depth))
]


@pytest.mark.parametrize(("layers", "raise_at"), _SHAPES)
def test_the_scope_class_shows_what_the_generator_showed(
    layers: list[dict[str, str]], raise_at: int | None
) -> None:
    assert _trace(skill_env_scope, layers, raise_at) == _trace(_generator_scope, layers, raise_at)
    assert dict(current_skill_env()) == {}


def test_an_empty_scope_sets_nothing_and_a_full_one_sets_and_resets() -> None:
    outer = current_skill_env()
    with skill_env_scope({}) as given:
        assert given is outer  # nothing new made or set
        assert current_skill_env() is outer
    with skill_env_scope({"A": "1"}) as given:
        assert current_skill_env() is given
        assert dict(given) == {"A": "1"}
        with skill_env_scope({}) as inner:
            assert inner is given
    assert current_skill_env() is outer


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_no_fault_callback_is_kept_without_a_plugin_section(
    anyio_backend: str, tmp_path: Path
) -> None:
    from openclaw_runtime.runner.prompt import resolve_run_prompt  # lazy: test only
    from openclaw_runtime.runner.request import RunRequest  # lazy: test only

    probe = ProbeProvider()
    runtime = _runtime(tmp_path, probe)
    try:
        model = runtime.resolve_model(runtime.config.agent.model or "")
        request = RunRequest(prompt="hi", session_id="s1")
        prompt = resolve_run_prompt(runtime, runtime.config, request, model, "off")
    finally:
        await runtime.aclose()
    assert prompt.overrides == ()
    assert prompt.on_error is None


def _estimates(session: Any, seed: int) -> list[int]:
    history = History(seed)
    got = []
    for _ in range(12):
        history.turn()
        got.append(
            estimate_prompt_tokens(
                session, list(history.messages), system_prompt="sys", prompt="go"
            )
        )
    return got


def _runtime(tmp_path: Path, probe: ProbeProvider) -> Runtime:
    return Runtime(
        probe_config(tmp_path), plugins=[probe.plugin()], load_entrypoints=False, memory=True
    )


class _Plain:
    """A session without a checkpointer (the reference)."""


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("seed", range(4))
async def test_a_disabled_checkpointer_estimates_as_no_checkpointer(
    anyio_backend: str, seed: int
) -> None:
    store = MemorySessionStore()
    session = await store.create(f"s{seed}", cwd="/w")
    checkpointer = session.replay_checkpoint
    assert isinstance(checkpointer, ReplayCheckpointer) and not checkpointer.enabled
    assert _estimates(session, seed) == _estimates(_Plain(), seed)
    assert checkpointer.prefix_tokens is None  # no recorder closure kept on it


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_an_enabled_checkpointer_still_gets_its_recorder(
    anyio_backend: str, tmp_path: Path
) -> None:
    session = await SessionManager.create(
        tmp_path / "s.jsonl", session_id="s1", cwd="/w", durability="none"
    )
    try:
        assert session.replay_checkpoint.enabled
        _estimates(session, 0)
        assert session.replay_checkpoint.prefix_tokens is not None
        _state, seed = history_tokens._state_of(session)
        assert seed is not None
    finally:
        await session.aclose()


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_only_a_file_session_resolves_its_lock_path(
    anyio_backend: str, tmp_path: Path
) -> None:
    memory = await MemorySessionStore().create("m1", cwd="/w")
    assert memory._lock_key == ""
    file_session = await SessionManager.create(
        tmp_path / "f.jsonl", session_id="f1", cwd="/w", durability="none"
    )
    try:
        assert file_session._lock_key == str((tmp_path / "f.jsonl").absolute())
    finally:
        await file_session.aclose()


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_finished_memory_run_leaves_no_scope_for_the_cyclic_collector(
    anyio_backend: str, tmp_path: Path
) -> None:
    """The skill scope and the prompt are freed by reference counting when a run returns."""
    from openclaw_runtime.prompt.plan import RunPrompt  # lazy: test only

    runtime = _runtime(tmp_path, ProbeProvider())
    try:
        await runtime.run("warm up", session_id="w")
        gc.collect()
        gc.disable()
        try:
            result = await runtime.run("hello", session_id="s2")
            kinds = (skill_env_scope, RunPrompt, fault_scope)
            left = [type(o).__name__ for o in gc.get_objects() if isinstance(o, kinds)]
        finally:
            gc.enable()
    finally:
        await runtime.aclose()
    assert result.ok
    assert left == []


@contextmanager
def _generator_fault_scope(listener: Any) -> Iterator[None]:
    """The form ``fault_scope`` had before (the reference)."""
    relay = guard_module._FaultRelay(listener)
    token = guard_module._LISTENER.set(relay)
    try:
        yield
    finally:
        relay.listener = None
        guard_module._LISTENER.reset(token)


def _fault_trace(scope: Any, depth: int, raise_at: int | None) -> list[Any]:
    """Faults raised at every level of nested scopes (and after them), and where each
    listener got them; a block may raise on the way out."""
    guard = PluginGuard()
    seen: list[Any] = []
    kept: list[Any] = []

    def level(n: int) -> None:
        if n == depth:
            guard.fault("p", "hook", f"inner {n}")
            if raise_at is not None:
                raise KeyError("inner")
            return
        with scope(lambda fault, n=n: seen.append((n, fault.error))):
            kept.append(guard_module._LISTENER.get())
            guard.fault("p", "hook", f"before {n}")
            try:
                level(n + 1)
            except KeyError:
                seen.append(("raised", n))
                if raise_at == n:
                    raise
            guard.fault("p", "hook", f"after {n}")
        guard.fault("p", "hook", f"outside {n}")

    try:
        level(0)
    except KeyError:
        seen.append(("escaped",))
    # a context copied inside a scope (a task started there) delivers nothing once it ended
    seen.append([relay.listener for relay in kept])
    seen.append(guard_module._LISTENER.get())
    return seen


@pytest.mark.parametrize(
    ("depth", "raise_at"),
    [(d, r) for d in range(4) for r in (None, *range(d))],
)
def test_the_fault_scope_class_delivers_what_the_generator_delivered(
    depth: int, raise_at: int | None
) -> None:
    assert _fault_trace(fault_scope, depth, raise_at) == _fault_trace(
        _generator_fault_scope, depth, raise_at
    )


# the live-run handle: its end event is made on first use, its delivered list on the first
# delivery; what waiters, offers and the run read is as before

_LIVE_STEPS = ["steer", "follow", "drain_steer", "drain_follow", "ask_ended", "close", "offer"]


async def _live_trace(steps: tuple[str, ...]) -> list[Any]:
    registry = LiveRunRegistry()
    handle = LiveRunHandle(session_id="s1", session_key=None, run_id="r1")
    registry.set(handle)
    seen: list[Any] = []
    for number, step in enumerate(steps):
        if step == "steer":
            handle.enqueue("steer", f"s{number}")
        elif step == "follow":
            handle.enqueue("follow_up", f"f{number}")
        elif step == "drain_steer":
            seen.append([m.content[0].text for m in await handle.drain_steering()])
        elif step == "drain_follow":
            seen.append([m.content[0].text for m in await handle.drain_follow_ups()])
        elif step == "ask_ended":
            seen.append(("ended", handle.ended.is_set()))
        elif step == "close":
            seen.append(("cleared", registry.clear(handle)))
        else:
            seen.append(("offer", handle.offer("steer", f"o{number}")))
        seen.append(([m.content[0].text for m in handle.delivered], handle.pending()))
    ended = handle.ended.is_set()
    # a waiter after the end returns at once (before it, one would wait: not asked here)
    seen.append(("end", ended, await registry.wait_for_end("s1") if ended else ended))
    if not handle.ended.is_set():
        registry.clear(handle)
        seen.append(("after clear", handle.ended.is_set()))
    return seen


def _expected_live_trace(steps: tuple[str, ...]) -> list[Any]:
    """What the handle answered before (a plain model of it: queues, an end flag)."""
    steering: list[str] = []
    follow_ups: list[str] = []
    delivered: list[str] = []
    ended = stopped = cleared = False
    seen: list[Any] = []
    for number, step in enumerate(steps):
        if step == "steer":
            steering.append(f"s{number}")
        elif step == "follow":
            follow_ups.append(f"f{number}")
        elif step == "drain_steer":
            got, steering = steering[:1], steering[1:]
            delivered += got
            seen.append(got)
        elif step == "drain_follow":
            if steering:
                got, steering = steering[:1], steering[1:]
            else:
                got, follow_ups = follow_ups[:1], follow_ups[1:]
            if not got:
                stopped = True
            delivered += got
            seen.append(got)
        elif step == "ask_ended":
            seen.append(("ended", ended))
        elif step == "close":
            seen.append(("cleared", not cleared))
            cleared = ended = stopped = True
        elif ended:
            seen.append(("offer", "no_active_run"))
        elif stopped:
            seen.append(("offer", "stopped"))
        else:
            steering.append(f"o{number}")
            seen.append(("offer", "queued"))
        seen.append((list(delivered), len(steering) + len(follow_ups)))
    seen.append(("end", ended, ended))
    if not ended:
        seen.append(("after clear", True))
    return seen


_LIVE_SHAPES = [
    shape
    for length in range(1, 5)
    for shape in itertools.product(_LIVE_STEPS, repeat=length)
    if shape.count("close") <= 1
]


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_the_live_handle_answers_as_before_in_every_order(anyio_backend: str) -> None:
    for shape in _LIVE_SHAPES:
        assert await _live_trace(shape) == _expected_live_trace(shape), shape


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
async def test_a_waiter_before_the_end_is_woken(anyio_backend: str) -> None:
    import anyio  # lazy: test only

    registry = LiveRunRegistry()
    handle = LiveRunHandle(session_id="s1", session_key=None, run_id="r1")
    registry.set(handle)
    woke: list[bool] = []

    async def wait() -> None:
        woke.append(await registry.wait_for_end("s1", 30))

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait)
        await anyio.wait_all_tasks_blocked()
        assert woke == []
        registry.clear(handle)
    assert woke == [True]


class _Lease:
    def __init__(self, name: str, seen: list[Any], clock: list[float]) -> None:
        self.name, self.seen, self.clock = name, seen, clock

    def heartbeat(self) -> None:
        self.seen.append((self.name, self.clock[0]))


def _beats(
    as_leases: bool, steps: tuple[float, ...], monkeypatch: pytest.MonkeyPatch, state_dir: Path
) -> Any:
    from openclaw_runtime.runner import run_state  # lazy: test only
    from openclaw_runtime.runner.request import RunRequest  # lazy: test only
    from openclaw_runtime.runner.run_state import RunState  # lazy: test only

    clock = [1_000.0]
    monkeypatch.setattr(run_state.time, "monotonic", lambda: clock[0])
    runtime = Runtime({"state_dir": str(state_dir)}, memory=True, load_entrypoints=False)
    state = RunState(runtime, RunRequest(prompt="hi"), None)
    seen: list[Any] = []
    session, global_ = _Lease("session", seen, clock), _Lease("global", seen, clock)
    if as_leases:
        state.start_heartbeats(leases=(session, global_))
    else:
        state.start_heartbeats([session.heartbeat, global_.heartbeat])
    for step in steps:
        clock[0] += step
        state.heartbeat()
    return seen


@pytest.mark.parametrize(
    "steps",
    [(), (0.1,), (0.6,), (0.4, 0.2, 0.3, 0.3), (0.5, 0.5, 0.49, 0.01), (1.0, 0.0, 2.0)],
)
def test_leases_are_beaten_as_their_bound_methods_were(
    steps: tuple[float, ...], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    assert _beats(True, steps, monkeypatch, tmp_path) == _beats(False, steps, monkeypatch, tmp_path)
