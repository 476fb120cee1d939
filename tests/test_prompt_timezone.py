"""``system_timezone`` is remembered per ``$TZ`` value, and follows a change of ``$TZ``."""

from __future__ import annotations

import pytest

from openclaw_runtime.prompt import plan
from openclaw_runtime.prompt.plan import system_timezone


@pytest.mark.parametrize(
    ("tz", "expected"),
    [
        ("Europe/Paris", "Europe/Paris"),
        (":Asia/Tokyo", "Asia/Tokyo"),
        ("America/New_York", "America/New_York"),
    ],
)
def test_tz_names_the_zone(monkeypatch: pytest.MonkeyPatch, tz: str, expected: str) -> None:
    monkeypatch.setenv("TZ", tz)
    assert system_timezone() == expected


def test_the_answer_is_resolved_once_per_tz_value(monkeypatch: pytest.MonkeyPatch) -> None:
    resolved: list[str] = []
    resolve = plan._resolve_system_timezone

    def counting(env: str) -> str:
        resolved.append(env)
        return resolve(env)

    monkeypatch.setattr(plan, "_TIMEZONE_MEMO", {})
    monkeypatch.setattr(plan, "_resolve_system_timezone", counting)
    monkeypatch.setenv("TZ", "Europe/Paris")
    assert [system_timezone() for _ in range(3)] == ["Europe/Paris"] * 3
    assert resolved == ["Europe/Paris"]
    monkeypatch.setenv("TZ", "Asia/Tokyo")  # a new value is seen at once
    assert system_timezone() == "Asia/Tokyo"
    monkeypatch.setenv("TZ", "Europe/Paris")
    assert system_timezone() == "Europe/Paris"
    assert resolved == ["Europe/Paris", "Asia/Tokyo"]


def test_an_unknown_tz_falls_back_past_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Not/AZone")
    answer = system_timezone()
    assert answer != "Not/AZone" and answer  # /etc/localtime's zone, else UTC
