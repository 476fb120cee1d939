"""Goes through the real entry point: proves pyproject's [project.entry-points] is right."""

from __future__ import annotations

from openclaw_runtime import Runtime
from openclaw_runtime.failover import FailoverReason, FailoverSignal


def test_openai_plugin_is_discovered_and_answers_for_its_providers():
    runtime = Runtime(on_load_failure="raise", allow=["openai"])
    record = {r.name: r for r in runtime.plugin_records()}["openai"]
    assert record.status == "loaded"
    assert record.distribution == "openclaw-runtime-openai"
    assert record.entry_point == "openclaw_runtime_openai.plugin"
    assert record.hooks == ["classify_failover"]
    runtime.plugin_manager.check_pending()
    result, plugin = runtime.hooks.classify_failover(
        FailoverSignal(
            provider="openai",
            status=429,
            code="insufficient_quota",
            message="429 You exceeded your current quota",
        )
    )
    assert plugin == "openai"
    assert result.reason == FailoverReason.BILLING
