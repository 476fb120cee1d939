"""The installed-plugin contract module: it finds what the repo's plugins register, and its
suites run in this session too (every plugin of requirements-test.txt is installed here)."""

from __future__ import annotations

import importlib.metadata

import pytest

from openclaw_runtime.testing.installed_contracts import (
    TestInstalledContextEngines,
    TestInstalledReplayValidators,
    TestInstalledSanitizers,
    TestInstalledStreamRepairers,
    installed_components,
    test_installed_plugin_loads_through_its_entry_point,
)

__all__ = [
    "TestInstalledContextEngines",
    "TestInstalledReplayValidators",
    "TestInstalledSanitizers",
    "TestInstalledStreamRepairers",
    "test_installed_plugin_loads_through_its_entry_point",
]


def installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.parametrize(
    ("distribution", "kind", "test_id"),
    [
        ("openclaw-runtime-sliding-window", "context_engine", "sliding_window:sliding_window"),
        ("openclaw-runtime-anthropic", "replay_validator", "anthropic:anthropic-messages"),
        ("openclaw-runtime-google", "replay_validator", "google:google-generative-ai"),
        ("openclaw-runtime-hello", "plugin", "hello:hello"),
        ("openclaw-runtime-redis", "plugin", "redis:redis"),
    ],
)
def test_discovery_finds_what_installed_plugins_register(distribution, kind, test_id):
    if not installed(distribution):
        pytest.skip(f"{distribution} is not installed in this environment")
    assert test_id in [c.test_id for c in installed_components()[kind]]


def test_builtins_are_not_treated_as_installed_plugins():
    found = installed_components()
    for kind, components in found.items():
        assert all(not c.plugin.startswith("builtin.") for c in components), kind
