"""Goes through the real entry point: proves pyproject's [project.entry-points] is right."""

from __future__ import annotations

from openclaw_runtime import Runtime
from openclaw_runtime.config import BackendSettings


def test_redis_plugin_is_discovered_and_registers_its_backends():
    runtime = Runtime(on_load_failure="raise", allow=["redis"])
    record = {r.name: r for r in runtime.plugin_records()}["redis"]
    assert record.status == "loaded"
    assert record.distribution == "openclaw-runtime-redis"
    assert record.entry_point == "openclaw_runtime_redis.plugin"
    runtime.plugin_manager.check_pending()
    kinds = set(BackendSettings.model_fields)
    for kind in kinds:
        assert "redis" in runtime.components.backends[kind].names(), kind
