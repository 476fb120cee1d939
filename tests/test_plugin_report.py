"""``plugin_report``: the rows of ``openclaw-runtime plugins``, joined from what the runtime knows."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from openclaw_runtime._plugin_report import plugin_report
from openclaw_runtime._plugins import PluginRecord
from openclaw_runtime._registry import ComponentClash
from openclaw_runtime.containment import PluginFault, PluginQuarantine
from openclaw_runtime.context.registry import ContextEngineQuarantine

EMPTY: dict[str, Any] = {
    "faults": (),
    "engine_quarantines": (),
    "guard_quarantines": (),
    "recorded_faults": (),
    "clashes": (),
}


def _rows(records: list[PluginRecord], **parts: Any) -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in plugin_report(records, **{**EMPTY, **parts})}


def test_a_loaded_plugin_row_carries_its_record() -> None:
    record = PluginRecord("alpha", "entrypoint", entry_point="alpha.plugin:x", hooks=["h"])
    record.distribution, record.version = "alpha-dist", "1.2"
    (row,) = plugin_report([record], **EMPTY)
    assert row == {
        "name": "alpha",
        "source": "entrypoint",
        "status": "loaded",
        "distribution": "alpha-dist",
        "version": "1.2",
        "entry_point": "alpha.plugin:x",
        "hooks": ["h"],
        "load_error": None,
        "hook_errors": [],
        "faults": [],
        "quarantines": [],
        "clashes": [],
    }


@pytest.mark.parametrize(
    ("part", "value", "field", "expected"),
    [
        (
            "faults",
            [PluginFault("alpha", "on_agent_event", "boom", 1.0)],
            "hook_errors",
            [{"hook": "on_agent_event", "error": "boom"}],
        ),
        (
            "recorded_faults",
            [{"plugin": "alpha", "hook": "x", "count": 3}],
            "faults",
            [{"plugin": "alpha", "hook": "x", "count": 3}],
        ),
        (
            "guard_quarantines",
            [PluginQuarantine("alpha", "on_agent_event", "open", 1)],
            "quarantines",
            [{"plugin": "alpha", "unit": "on_agent_event", "phase": "open", "trips": 1}],
        ),
        (
            "engine_quarantines",
            [
                ContextEngineQuarantine(
                    "eng", "assemble", "boom", datetime(2026, 1, 1, tzinfo=UTC), "alpha"
                )
            ],
            "quarantines",
            [
                {
                    "engineId": "eng",
                    "operation": "assemble",
                    "reason": "boom",
                    "failedAt": "2026-01-01T00:00:00+00:00",
                    "owner": "alpha",
                }
            ],
        ),
    ],
)
def test_each_source_lands_in_the_plugins_row(
    part: str, value: list[Any], field: str, expected: list[Any]
) -> None:
    rows = _rows(
        [PluginRecord("alpha", "explicit"), PluginRecord("beta", "explicit")], **{part: value}
    )
    assert rows["alpha"][field] == expected
    assert rows["beta"][field] == []


def test_a_context_engine_unit_of_the_guard_is_left_to_the_engine_slot() -> None:
    quarantine = PluginQuarantine("alpha", "context_engine:eng", "open", 1)
    rows = _rows([PluginRecord("alpha", "explicit")], guard_quarantines=[quarantine])
    assert rows["alpha"]["quarantines"] == []


def test_a_clash_is_listed_under_both_plugins_once() -> None:
    clash = ComponentClash("provider API", "openai", "alpha", "beta", "first")
    rows = _rows(
        [PluginRecord("alpha", "explicit"), PluginRecord("beta", "explicit")], clashes=[clash]
    )
    assert rows["alpha"]["clashes"] == rows["beta"]["clashes"] == [clash.to_dict()]


def test_plugins_known_only_from_the_fault_record_get_not_loaded_rows() -> None:
    recorded = [{"plugin": "gone", "hook": "x"}, {"plugin": None, "hook": "y"}]
    rows = plugin_report(
        [PluginRecord("alpha", "explicit")], **{**EMPTY, "recorded_faults": recorded}
    )
    assert [row["name"] for row in rows] == ["alpha", "gone", "(unknown plugin)"]
    assert rows[1]["status"] == rows[2]["status"] == "not loaded"
    assert rows[1]["source"] == "record"
    assert rows[1]["faults"] == [{"plugin": "gone", "hook": "x"}]
