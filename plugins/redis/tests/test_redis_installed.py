"""Goes through the real entry point: proves pyproject's [project.entry-points] is right."""

from __future__ import annotations

import pytest
from openclaw_runtime_redis._conn import REDIS_URL_ENV, RedisSettings

from openclaw_runtime import ConfigurationError, Runtime
from openclaw_runtime.backends import BACKEND_KINDS


def test_redis_plugin_is_discovered_and_registers_its_backends():
    runtime = Runtime(on_load_failure="raise", allow=["redis"])
    record = {r.name: r for r in runtime.plugin_records()}["redis"]
    assert record.status == "loaded"
    assert record.distribution == "openclaw-runtime-redis"
    assert record.entry_point == "openclaw_runtime_redis.plugin"
    runtime.plugin_manager.check_pending()
    for kind in BACKEND_KINDS:  # ([backends] also has ``default``, which is no kind)
        assert "redis" in runtime.components.backends[kind].names(), kind


def test_settings_need_a_url_and_never_show_it(monkeypatch):
    monkeypatch.delenv(REDIS_URL_ENV, raising=False)
    with pytest.raises(ConfigurationError, match=REDIS_URL_ENV):
        RedisSettings.resolve()
    monkeypatch.setenv(REDIS_URL_ENV, "http://user:hunter2secret@127.0.0.1:6379")
    with pytest.raises(ConfigurationError, match="redis://") as caught:
        RedisSettings.resolve()
    assert "hunter2secret" not in str(caught.value)
    monkeypatch.setenv(REDIS_URL_ENV, "redis://:hunter2secret@127.0.0.1:6379/0")
    assert "hunter2secret" not in repr(RedisSettings.resolve())
