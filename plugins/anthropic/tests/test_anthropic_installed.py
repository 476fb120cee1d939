"""Goes through the real entry point: proves pyproject's [project.entry-points] is right."""

from __future__ import annotations

from openclaw_runtime import Runtime


def test_anthropic_plugin_is_discovered_with_its_hooks():
    runtime = Runtime(on_load_failure="raise", allow=["anthropic"])
    record = {r.name: r for r in runtime.plugin_records()}["anthropic"]
    assert record.status == "loaded"
    assert record.distribution == "openclaw-runtime-anthropic"
    assert record.entry_point == "openclaw_runtime_anthropic.plugin"
    assert record.hooks == [
        "classify_failover",
        "register_models",
        "register_providers",
        "validate_replay_turns",
    ]
    runtime.plugin_manager.check_pending()
    api = {"anthropic": "anthropic-messages", "google": "google-generative-ai"}["anthropic"]
    assert runtime.components.providers.registration(api).plugin == "anthropic"
