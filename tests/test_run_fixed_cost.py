"""Shortcuts in what every run pays once (issue 13, runfix) give what the long way gave.

* ``Runtime.transcript_sanitizers()`` is worked out once per registry state: for a table of
  registries (built-ins only, plugin stages, a stage added after the first call, a clash that
  replaces a stage, a clash that keeps it) the cached answer equals a fresh one — same names,
  orders, plugins and options, built-ins bare, plugin stages guarded around the same function —
  and each call hands out a list of its own.
* ``with_abort_signal`` (the live run's copy of its request) equals ``dataclasses.replace``
  field by field on a table of requests, and leaves the caller's request alone.
* ``is_inbox_lease`` answers what ``isinstance(inbox, LiveInboxLease)`` answers on a table of
  inbox shapes.
* ``FileLaneStore.path`` remembers a lane's record path: the same path as worked out anew,
  for many lanes and past the memo's bound.
* The attempt timer (a loop callback on asyncio, a task on trio) fires once when its time is
  up, never once disarmed, and an attempt that runs out while a tool runs still ends as a
  timeout (real HTTP, both loops).
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from openclaw_runtime import Runtime
from openclaw_runtime._registry import BUILTIN_PLUGIN_PREFIX, Registration
from openclaw_runtime.abort import AbortController
from openclaw_runtime.agent import tool
from openclaw_runtime.backends.steering import LiveInboxLease
from openclaw_runtime.messages import ImageContent
from openclaw_runtime.runner import file_lanes
from openclaw_runtime.runner.attempt_timer import arm_attempt_timer
from openclaw_runtime.runner.live_inbox import FileLiveInbox
from openclaw_runtime.runner.live_run import is_inbox_lease, with_abort_signal
from openclaw_runtime.runner.request import RunRequest
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply
from tests.run_support import mock_openai_config
from tests.test_run_recovery import Recorder

# --------------------------------------------------------------------------- sanitizers


def _stage(messages: list[Any], policy: Any) -> list[Any]:
    return messages


def _other_stage(messages: list[Any], policy: Any) -> list[Any]:
    return list(messages)


def _describe(registration: Registration[Any]) -> tuple[Any, ...]:
    component = registration.component
    plugin = registration.plugin
    builtin = plugin is None or plugin.startswith(BUILTIN_PLUGIN_PREFIX)
    # a plugin's stage is a fresh guard wrapper per build: compare what it wraps
    target = component if builtin else component.__wrapped__
    return (registration.name, registration.order, plugin, dict(registration.options), target)


# (name, registrations before the first call, registrations added after it)
SANITIZER_TABLE: list[
    tuple[str, list[tuple[str, Any, str, int]], list[tuple[str, Any, str, int]]]
] = [
    ("built-ins only", [], []),
    ("a plugin stage", [("strip", _stage, "acme", 5)], []),
    (
        "two plugin stages, one late",
        [("strip", _stage, "acme", 5), ("tail", _other_stage, "zed", 500)],
        [],
    ),
    ("a stage added after the first call", [], [("late", _stage, "acme", 50)]),
    (
        "a clash that replaces a stage",
        [("strip", _stage, "acme", 5)],
        [("strip", _other_stage, "zed", 7)],
    ),
    (
        "a clash that keeps the stage",
        [("strip", _stage, "zed", 5)],
        [("strip", _other_stage, "acme", 7)],
    ),
]


@pytest.mark.parametrize(("name", "before", "after"), SANITIZER_TABLE)
def test_transcript_sanitizers_cached_equal_a_fresh_build(
    tmp_path: Path,
    name: str,
    before: list[tuple[str, Any, str, int]],
    after: list[tuple[str, Any, str, int]],
) -> None:
    runtime = Runtime({"state_dir": str(tmp_path)}, load_entrypoints=False)
    registry = runtime.components.transcript_sanitizers
    registry.prefer = {"strip": "zed"}
    for stage_name, fn, plugin, order in before:
        registry.add(stage_name, fn, plugin=plugin, order=order)
    first = runtime.transcript_sanitizers()
    assert [_describe(r) for r in first] == [
        _describe(r) for r in runtime._guarded_sanitizers(registry.ordered())
    ]
    for stage_name, fn, plugin, order in after:
        registry.add(stage_name, fn, plugin=plugin, order=order)
    second, third = runtime.transcript_sanitizers(), runtime.transcript_sanitizers()
    fresh = runtime._guarded_sanitizers(registry.ordered())
    assert [_describe(r) for r in second] == [_describe(r) for r in fresh]
    assert second is not third and second == third  # a list of its own, the same stages
    assert all(a is b for a, b in zip(second, third, strict=True))
    second.clear()  # a caller changing its list changes nobody else's
    assert [_describe(r) for r in runtime.transcript_sanitizers()] == [_describe(r) for r in fresh]
    assert [r.name for r in fresh] == sorted(
        (r.name for r in fresh), key=lambda n: (registry.registration(n).order, n)
    )


def test_a_guarded_plugin_stage_still_goes_through_the_guard(tmp_path: Path) -> None:
    runtime = Runtime({"state_dir": str(tmp_path)}, load_entrypoints=False)
    calls: list[int] = []

    def counting(messages: list[Any], policy: Any) -> list[Any]:
        calls.append(len(messages))
        return messages

    runtime.components.transcript_sanitizers.add("count", counting, plugin="acme", order=1)
    stage = next(r for r in runtime.transcript_sanitizers() if r.name == "count")
    assert stage.component is not counting and stage.component.__wrapped__ is counting
    assert stage.component([1, 2], None) == [1, 2] and calls == [2]


# --------------------------------------------------------------------------- request copy


@tool
async def _echo(text: str) -> str:
    """Echo."""
    return text


REQUEST_TABLE: list[tuple[str, dict[str, Any]]] = [
    ("a prompt", {}),
    ("a session and a model", {"session_id": "s1", "session_key": "agent:a:b", "model": "m"}),
    ("a sender: not the owner", {"sender_id": "u1"}),
    ("a group, owner given", {"group_id": "g", "sender_is_owner": True}),
    (
        "everything else",
        {
            "tools": [_echo],
            "images": [ImageContent(data="aGk=", mime_type="image/png")],
            "trigger": "cron",
            "timeout_s": 3.0,
            "idle_timeout_s": 1.0,
            "auth_profile": "p",
            "lock_auth_profile": True,
            "max_tokens": 7,
            "verbose": "full",
            "fallbacks": ["x"],
            "input_provenance": {"kind": "test"},
            "messaging_tool_sent_texts": ["hi"],
        },
    ),
    ("a signal already", {"abort_signal": AbortController().signal}),
]


@pytest.mark.parametrize(("name", "fields"), REQUEST_TABLE)
def test_with_abort_signal_equals_dataclasses_replace(name: str, fields: dict[str, Any]) -> None:
    request = RunRequest(prompt="hello", **fields)
    before = dict(vars(request))
    signal = AbortController().signal
    copied = with_abort_signal(request, signal)
    expected = dataclasses.replace(request, abort_signal=signal)
    assert type(copied) is type(expected)
    assert vars(copied) == vars(expected)
    assert copied.abort_signal is signal
    assert copied is not request and vars(request) == before


# --------------------------------------------------------------------------- lease check


class _Lease:
    renew_every_s = 3.0

    async def renew(self, session_id: str, run_id: str) -> bool:
        return True


class _NoInterval:
    async def renew(self, session_id: str, run_id: str) -> bool:
        return True


class _NoRenew:
    renew_every_s = 3.0


class _RenewNone:
    renew_every_s = 3.0
    renew = None


class _InstanceLease:
    def __init__(self) -> None:
        self.renew_every_s = 1.0

    async def renew(self, session_id: str, run_id: str) -> bool:
        return True


class _DynamicRenew:
    renew_every_s = 1.0

    def __getattr__(self, name: str) -> Any:
        if name == "renew":
            return lambda *args: True
        raise AttributeError(name)


@pytest.mark.parametrize(
    "make",
    [
        lambda tmp: FileLiveInbox(tmp),
        lambda tmp: _Lease(),
        lambda tmp: _NoInterval(),
        lambda tmp: _NoRenew(),
        lambda tmp: _RenewNone(),
        lambda tmp: _InstanceLease(),
        lambda tmp: _DynamicRenew(),
        lambda tmp: object(),
        lambda tmp: None,
    ],
    ids=[
        "file",
        "lease",
        "no interval",
        "no renew",
        "renew None",
        "instance",
        "dynamic",
        "object",
        "None",
    ],
)
def test_is_inbox_lease_answers_like_the_protocol_check(tmp_path: Path, make: Any) -> None:
    inbox = make(tmp_path)
    assert is_inbox_lease(inbox) == isinstance(inbox, LiveInboxLease)


# --------------------------------------------------------------------------- attempt timer


@pytest.mark.anyio
async def test_the_attempt_timer_fires_once_when_armed() -> None:
    fired = anyio.Event()
    calls: list[int] = []

    def fire() -> None:
        calls.append(1)
        fired.set()

    with anyio.fail_after(10):  # a safety net, not a timing assertion
        async with anyio.create_task_group() as tg:
            arm_attempt_timer(tg, 0.01, fire)
            await fired.wait()
            tg.cancel_scope.cancel()
    assert calls == [1]


@pytest.mark.anyio
async def test_a_disarmed_attempt_timer_never_fires() -> None:
    calls: list[int] = []
    async with anyio.create_task_group() as tg:
        disarm = arm_attempt_timer(tg, 0, lambda: calls.append(1))
        disarm()
        for _ in range(5):  # the loop runs every callback that was due
            await anyio.lowlevel.checkpoint()
    assert calls == []


class _Stuck:
    """A tool that waits until the attempt is aborted."""

    def __init__(self) -> None:
        self.started = 0

    async def __call__(self, city: str) -> str:
        self.started += 1
        await anyio.sleep_forever()
        return city


@pytest.mark.anyio
@pytest.mark.parametrize("memory", [False, True], ids=["durable", "memory"])
async def test_an_attempt_that_runs_out_during_a_tool_says_so(tmp_path: Path, memory: bool) -> None:
    """The timer's callback marks the attempt timed out and aborts it, here while a tool that
    never returns runs (over real HTTP): the run ends as a timeout, nothing is left hanging."""
    stuck = _Stuck()
    slow = tool(name="get_weather", description="The weather.")(stuck.__call__)
    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as server:
        server.enqueue(Reply(tool_calls=[("get_weather", {"city": "Paris"})], model="main"))
        config = mock_openai_config(
            tmp_path / "state",
            server,
        )
        runtime = Runtime(config, memory=memory, load_entrypoints=False)
        recorder = Recorder()
        try:
            with anyio.fail_after(30):
                result = await runtime.run(
                    "weather?", session_id="s1", tools=[slow], timeout_s=2.0, on_event=recorder
                )
        finally:
            await runtime.aclose()
    # normally the model has answered and the tool runs when the time is up; on a loaded
    # machine the time may run out during the model call instead: either way the run ends
    assert stuck.started in (0, 1)
    assert result.outcome.status == "timeout", result
    assert result.error is not None and result.error.kind == "timeout"
    assert "timed out after 2s" in result.error.message
    assert [e.timed_out for e in recorder.of("attempt_end")] == [True]


# --------------------------------------------------------------------------- lane record paths


def test_lane_record_paths_are_remembered_and_still_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remembered path of a lane is the one worked out from its name, for many lanes and
    past the memo's bound (it starts over, it never answers with another lane's path)."""
    monkeypatch.setattr(file_lanes, "_PATH_MEMO_SIZE", 8)
    store = file_lanes.FileLaneStore(tmp_path)
    lanes = [f"session:{i}" for i in range(20)] + ["global", "session:agent:a:b", "session:é"]
    for _ in range(2):
        for lane in lanes:
            expected = tmp_path / (hashlib.sha256(lane.encode()).hexdigest()[:32] + ".json")
            assert store.path(lane) == expected
    assert len({store.path(lane) for lane in lanes}) == len(lanes)


def test_a_released_lane_is_forgotten(tmp_path: Path) -> None:
    """The memo holds the lanes held now, not every lane a long-lived process ever saw."""
    store = file_lanes.FileLaneStore(tmp_path)
    claimant = file_lanes.FileLaneClaimant("c1", 1, store.host, None)
    for i in range(50):
        lane = f"session:{i}"
        path = store.path(lane)
        step = store.step(lane, claimant, 1)
        assert step is not None and step.granted and path.exists()
        assert store._paths == {lane: str(path)}
        assert store.release(lane, claimant.id)
        assert not path.exists()
        assert store._paths == {}
        assert store._sole == {}
