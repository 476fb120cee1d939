"""The plugin circuit breaker and the clash rule, as tables (``openclaw_runtime.containment``)."""

from __future__ import annotations

import pytest

from openclaw_runtime._registry import ComponentRegistry, resolve_component_clash
from openclaw_runtime.containment import (
    BreakerPolicy,
    BreakerState,
    PluginFault,
    PluginGuard,
    breaker_admit,
    breaker_fault,
    breaker_success,
    fault_scope,
    fold_fault,
)

POLICY = BreakerPolicy(threshold=3, window_s=60.0, cooloff_s=100.0)
CLOSED = BreakerState()
OPEN_AT_50 = BreakerState("open", (10.0, 30.0, 50.0), opened_at=50.0, trips=1)
HALF_OPEN_AT_150 = BreakerState("half_open", (50.0,), opened_at=50.0, trial_at=150.0, trips=1)


@pytest.mark.parametrize(
    ("state", "now", "admitted", "phase"),
    [
        (CLOSED, 0.0, True, "closed"),
        (BreakerState("closed", (1.0, 2.0)), 3.0, True, "closed"),
        (OPEN_AT_50, 60.0, False, "open"),
        (OPEN_AT_50, 149.9, False, "open"),
        (OPEN_AT_50, 150.0, True, "half_open"),  # cool-off over: the one trial call
        (HALF_OPEN_AT_150, 151.0, False, "half_open"),  # trial in flight: nobody else
        (HALF_OPEN_AT_150, 250.0, True, "half_open"),  # trial outcome lost: try again
    ],
)
def test_admit(state: BreakerState, now: float, admitted: bool, phase: str) -> None:
    ok, after = breaker_admit(state, now, POLICY)
    assert (ok, after.phase) == (admitted, phase)


@pytest.mark.parametrize(
    ("state", "now", "tripped", "phase", "faults"),
    [
        (CLOSED, 10.0, False, "closed", (10.0,)),
        (BreakerState("closed", (10.0,)), 20.0, False, "closed", (10.0, 20.0)),
        # the third fault within the window opens it
        (BreakerState("closed", (10.0, 20.0)), 30.0, True, "open", (10.0, 20.0, 30.0)),
        # faults older than the window are forgotten: 10.0 is out at 75.0
        (BreakerState("closed", (10.0, 20.0)), 75.0, False, "closed", (20.0, 75.0)),
        # exactly window_s old is out too
        (BreakerState("closed", (10.0, 20.0)), 70.0, False, "closed", (20.0, 70.0)),
        # the trial failed: open again for another cool-off
        (HALF_OPEN_AT_150, 151.0, True, "open", (151.0,)),
        # a late fault of a call admitted before it opened changes nothing
        (OPEN_AT_50, 55.0, False, "open", (10.0, 30.0, 50.0)),
    ],
)
def test_fault(
    state: BreakerState, now: float, tripped: bool, phase: str, faults: tuple[float, ...]
) -> None:
    step = breaker_fault(state, now, POLICY)
    assert (step.tripped, step.state.phase, step.state.faults) == (tripped, phase, faults)
    if tripped:
        assert step.state.opened_at == now and step.state.trips == state.trips + 1


@pytest.mark.parametrize(
    ("state", "phase", "faults"),
    [
        (CLOSED, "closed", ()),
        (BreakerState("closed", (1.0,)), "closed", (1.0,)),  # a success does not forgive
        (HALF_OPEN_AT_150, "closed", ()),  # the trial succeeded: back in service
        (OPEN_AT_50, "open", (10.0, 30.0, 50.0)),
    ],
)
def test_success(state: BreakerState, phase: str, faults: tuple[float, ...]) -> None:
    after = breaker_success(state)
    assert (after.phase, after.faults) == (phase, faults)
    assert after.trips == state.trips


@pytest.mark.parametrize("kwargs", [{"threshold": 0}, {"window_s": 0}, {"cooloff_s": -1}])
def test_policy_rejects_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="breaker"):
        BreakerPolicy(**kwargs)  # type: ignore[arg-type]


def test_threshold_one_quarantines_at_the_first_fault() -> None:
    step = breaker_fault(CLOSED, 5.0, BreakerPolicy(threshold=1))
    assert step.tripped and step.state.phase == "open"


def test_guard_walks_the_whole_cycle_per_unit() -> None:
    now = [0.0]
    seen: list[PluginFault] = []
    guard = PluginGuard(POLICY, clock=lambda: now[0], redact=lambda t: t.replace("s3cret", "***"))

    def boom() -> None:
        raise RuntimeError("s3cret exploded")

    with fault_scope(seen.append):
        for _ in range(3):
            assert guard.call("p", "on_agent_event", boom, default="skipped") == "skipped"
            now[0] += 1
    assert [f.quarantined for f in seen] == [False, False, True]
    assert seen[0].error == "RuntimeError: *** exploded"
    # the unit is open; the same plugin's other units are not
    assert not guard.admits("p", "on_agent_event")
    assert guard.call("p", "classify_failover", lambda: "answer") == "answer"
    assert [(q.plugin, q.unit, q.phase) for q in guard.quarantines()] == [
        ("p", "on_agent_event", "open")
    ]
    now[0] += 100
    assert guard.call("p", "on_agent_event", lambda: "trial") == "trial"
    assert guard.quarantines() == [] and guard.admits("p", "on_agent_event")
    # outside a fault scope nothing is delivered, but everything is kept
    guard.fault("p", "before_agent_run", "plain text")
    assert len(seen) == 3 and len(guard.faults) == 4
    guard.reset("p")
    assert guard.faults == []


def test_fold_fault_counts_one_entry_per_plugin_hook_unit() -> None:
    entries = fold_fault([], PluginFault("p", "h", "e1", 1.0))
    entries = fold_fault(entries, PluginFault("p", "h", "e2", 2.0, quarantined=True))
    entries = fold_fault(entries, PluginFault("p", "h", "e3", 3.0, unit="h:other"))
    assert [(e["unit"], e["count"], e["error"], e["quarantines"]) for e in entries] == [
        ("h", 2, "e2", 1),
        ("h:other", 1, "e3", 0),
    ]
    assert entries[0]["quarantinedAt"] == 2.0


@pytest.mark.parametrize(
    ("first", "second", "prefer", "order", "winner", "rule"),
    [
        ("a", "b", {}, None, "a", "first"),  # no order known: the earlier registration
        ("b", "a", {}, {"a": 0, "b": 1}, "a", "first"),  # loaded first wins
        ("a", "b", {"x": "b"}, {"a": 0, "b": 1}, "b", "config"),
        ("a", "b", {"x": "nobody"}, None, "a", "first"),  # a preference naming neither
        ("a", "builtin.core", {}, {"builtin.core": 0, "a": 1}, "builtin.core", "builtin"),
        ("builtin.core", "a", {}, None, "builtin.core", "builtin"),
        ("builtin.core", "a", {"x": "a"}, None, "a", "config"),  # config beats built-in
        (None, "a", {}, None, None, "first"),
    ],
)
def test_clash_rule(
    first: str | None,
    second: str | None,
    prefer: dict[str, str],
    order: dict[str, int] | None,
    winner: str | None,
    rule: str,
) -> None:
    assert resolve_component_clash("x", first, second, prefer, order) == (winner, rule)


def test_registry_replaces_the_entry_when_the_newcomer_wins() -> None:
    registry: ComponentRegistry[int] = ComponentRegistry("widget")
    registry.prefer = {"w": "new"}
    registry.add("w", 1, plugin="old")
    clash = registry.add("w", 2, plugin="new")
    assert registry.get("w") == 2 and registry.registration("w").plugin == "new"
    assert clash is not None and (clash.kept, clash.dropped, clash.rule) == ("new", "old", "config")
