"""Core test configuration: strict plugin loading, raised CLI errors, isolated caches."""

from __future__ import annotations

import os

import pytest

os.environ["OPENCLAW_RUNTIME_STRICT_PLUGINS"] = "1"
os.environ["OPENCLAW_RUNTIME_RAISE_ERRORS"] = "1"


@pytest.fixture(autouse=True, scope="session")
def _isolated_entry_point_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    # stevedore caches entry-point listings on disk; keep ours out of the user's cache
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    # a Runtime without a state_dir writes to ~/.openclaw-runtime (the plugin fault record):
    # keep the user's home out of the test session
    os.environ["HOME"] = str(tmp_path_factory.mktemp("home"))
