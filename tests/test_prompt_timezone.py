"""What a run's prompt resolves once instead of every run: ``system_timezone`` per ``$TZ``
value (a change of ``$TZ`` is seen at once), and the built system prompt per whole context
when no plugin section takes part."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from openclaw_runtime.prompt import PromptSectionOverride, plan
from openclaw_runtime.prompt.plan import prepare_run_prompt, system_timezone
from openclaw_runtime.prompt.settings import PromptSettings


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


# --------------------------------------------------------------------------- built prompts


def _prepare(settings: PromptSettings, **kwargs: object) -> plan.RunPrompt:
    return prepare_run_prompt(
        settings, tools=[], model="p/m", now=datetime(2026, 12, 3, tzinfo=UTC), **kwargs
    )  # type: ignore[arg-type]


def test_runs_with_the_same_context_share_one_build(monkeypatch: pytest.MonkeyPatch) -> None:
    builds: list[str] = []
    build = plan.build_agent_system_prompt

    def counting(ctx: object, **kwargs: object) -> str:
        builds.append(ctx.extra_system_prompt)  # type: ignore[attr-defined]
        return build(ctx, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(plan, "_BUILT", {})
    monkeypatch.setattr(plan, "build_agent_system_prompt", counting)
    monkeypatch.setenv("TZ", "UTC")
    settings = PromptSettings()
    first = _prepare(settings, system_prompt="Be brief.").system_prompt
    second = _prepare(settings, system_prompt="Be brief.").system_prompt
    assert first == second and "Be brief." in first
    assert builds == ["Be brief."]
    other = _prepare(settings, system_prompt="Be verbose.").system_prompt
    assert "Be verbose." in other and builds == ["Be brief.", "Be verbose."]
    # another model on the Runtime line is another context
    assert "p/other" in _prepare(settings, system_prompt="Be brief.").render("p/other")
    assert len(builds) == 3


def test_prompts_with_plugin_sections_are_built_every_run(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def section(ctx: object) -> str:
        calls.append(1)
        return f"call {len(calls)}"

    monkeypatch.setattr(plan, "_BUILT", {})
    override = PromptSectionOverride("plugin_notes", section, plugin="p")
    texts = [
        _prepare(PromptSettings(), system_prompt="x", overrides=[override]).system_prompt
        for _ in range(2)
    ]
    assert "call 1" in texts[0] and "call 2" in texts[1]  # may differ per run: not shared
    assert plan._BUILT == {}
