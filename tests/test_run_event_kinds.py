"""A run hands out (and builds) only the event kinds someone listens to; reply payloads are
built once per run (issue 13, the run path's fixed cost)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime._markers import hookimpl
from openclaw_runtime.events import Event
from openclaw_runtime.runner import attempt_loop, run, run_result, run_state
from openclaw_runtime.runner.event_kinds import (
    ALL_EVENT_KINDS,
    declared_event_kinds,
    wanted_event_kinds,
)

from .run_support import ProbeProvider, probe_config

pytestmark = pytest.mark.anyio


class _Listener:
    def __init__(self, kinds: Any = None) -> None:
        if kinds is not None:
            self.event_kinds = kinds
        self.seen: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.seen.append(event)


def _plain(event: Event) -> None:
    return None


# --------------------------------------------------------------------------- the policy


@pytest.mark.parametrize(
    ("listeners", "expected"),
    [
        ([], frozenset()),
        ([_plain], ALL_EVENT_KINDS),
        ([_Listener({"run_end"})], frozenset({"run_end"})),
        ([_Listener(["run_end", "message_update"])], frozenset({"run_end", "message_update"})),
        ([_Listener({"run_end"}), _Listener({"run_start"})], frozenset({"run_end", "run_start"})),
        ([_Listener({"run_end"}), _plain], ALL_EVENT_KINDS),
        ([_Listener(set())], frozenset()),
    ],
)
def test_wanted_kinds_are_the_union_of_the_listeners(
    listeners: list[Any], expected: frozenset[str]
) -> None:
    wanted = wanted_event_kinds(listeners)
    assert wanted == expected
    if expected is ALL_EVENT_KINDS:
        assert "run_end" in wanted and "anything at all" in wanted
    else:
        assert "attempt_start" not in wanted


@pytest.mark.parametrize(
    ("kinds", "error", "names"),
    [
        ("run_end", TypeError, "iterable of event type names"),
        (42, TypeError, "iterable of event type names"),
        ({"run_end", 7}, TypeError, "7"),
        ({"run_end", "run_ned"}, ValueError, r"'run_ned' \(did you mean 'run_end'\?\)"),
        ({"zzzz"}, ValueError, r"types: 'zzzz'$"),
    ],
)
def test_a_bad_declaration_is_refused_naming_what_is_wrong(
    kinds: Any, error: type[Exception], names: str
) -> None:
    with pytest.raises(error, match=names):
        declared_event_kinds(_Listener(kinds))


# --------------------------------------------------------------------------- runs


def _runtime(tmp_path: Path, provider: ProbeProvider, *plugins: Any) -> Runtime:
    return Runtime(
        probe_config(tmp_path),
        plugins=[("probe", provider.plugin()), *plugins],
        load_entrypoints=False,
        env={},
    )


class _Counted:
    """Counts the constructions of the event classes ``monkeypatch`` replaced."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.built: dict[str, int] = {}
        self.redacted = 0
        for module, name in (
            (run, "RunStart"),
            (run, "RunEnd"),
            (run, "LaneWait"),
            (run, "LaneAcquired"),
            (attempt_loop, "AttemptStart"),
            (attempt_loop, "AttemptEnd"),
        ):
            monkeypatch.setattr(module, name, self._counting(getattr(module, name)))
        redact = run_state.redact_event

        def counting_redact(event: Event) -> Event:
            self.redacted += 1
            return redact(event)

        monkeypatch.setattr(run_state, "redact_event", counting_redact)

    def _counting(self, cls: type[Event]) -> Any:
        built = self.built
        kind = cls.type

        def make(*args: Any, **kwargs: Any) -> Event:
            built[kind] = built.get(kind, 0) + 1
            return cls(*args, **kwargs)

        make.type = kind  # type: ignore[attr-defined]
        return make


async def test_a_run_nobody_listens_to_builds_no_run_level_event(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = _Counted(monkeypatch)
    provider = ProbeProvider()
    async with _runtime(tmp_path, provider) as runtime:
        result = await runtime.run("hi", session_id="s1")
    assert result.ok and result.text == "ok"
    assert counted.built == {}
    assert counted.redacted == 0  # nothing was handed out, so nothing was redacted


async def test_a_listener_gets_the_kinds_it_asked_for_and_only_those_are_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = _Counted(monkeypatch)
    provider = ProbeProvider()
    listener = _Listener({"run_end", "message_end"})
    async with _runtime(tmp_path, provider) as runtime:
        result = await runtime.run("hi", session_id="s1", on_event=listener)
    assert result.ok
    kinds = [event.type for event in listener.seen]
    assert kinds == ["message_end", "message_end", "run_end"]
    assert listener.seen[-1].outcome["status"] == "ok"  # type: ignore[attr-defined]
    assert counted.built == {"run_end": 1}


async def test_a_listener_without_a_declaration_gets_every_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counted = _Counted(monkeypatch)
    provider = ProbeProvider()
    listener = _Listener()
    async with _runtime(tmp_path, provider) as runtime:
        await runtime.run("hi", session_id="s1", on_event=listener)
    kinds = [event.type for event in listener.seen]
    for kind in ("run_start", "lane_wait", "lane_acquired", "attempt_start", "attempt_end"):
        assert kind in kinds
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert counted.built["lane_wait"] == 2 and counted.built["run_start"] == 1
    assert counted.redacted == len(kinds)


async def test_an_observing_plugin_gets_every_kind_whatever_on_event_asked_for(
    tmp_path: Path,
) -> None:
    observed: list[str] = []

    class Observer:
        @hookimpl
        def on_agent_event(self, event: Event, session_id: str | None) -> None:
            observed.append(event.type)

    provider = ProbeProvider()
    listener = _Listener({"run_end"})
    async with _runtime(tmp_path, provider, ("observer", Observer())) as runtime:
        await runtime.run("hi", session_id="s1", on_event=listener)
    assert "run_start" in observed and "attempt_end" in observed and observed[-1] == "run_end"
    # the plugin wants everything, so the callback gets everything too: what a run hands out
    # is one decision per run, not a filter per listener
    assert [e.type for e in listener.seen] == observed


async def test_a_bad_declaration_fails_the_run_up_front(tmp_path: Path) -> None:
    provider = ProbeProvider()
    async with _runtime(tmp_path, provider) as runtime:
        with pytest.raises(ValueError, match="run_ned"):
            await runtime.run("hi", session_id="s1", on_event=_Listener({"run_ned"}))
    assert provider.calls == []


async def test_reply_payloads_are_built_once_per_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds: list[int] = []
    build = run_result.build_embedded_run_payloads

    def counting(**kwargs: Any) -> Any:
        builds.append(1)
        return build(**kwargs)

    monkeypatch.setattr(run_result, "build_embedded_run_payloads", counting)
    provider = ProbeProvider()
    async with _runtime(tmp_path, provider) as runtime:
        first = await runtime.run("hi", session_id="s1")
        assert [p.text for p in first.payloads] == ["ok"]
        assert len(builds) == 1  # the turn's count, the fallback check, the result: one build
        second = await runtime.run("again", session_id="s1")
    # a new run (new messages) builds its own
    assert [p.text for p in second.payloads] == ["ok"] and len(builds) == 2
