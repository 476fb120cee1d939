"""Real distributions installed with pip are discovered through the entry-point group.

Each distribution is pip-installed into a private directory that a fresh interpreter gets on
its ``PYTHONPATH``, so the test environment itself is never changed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DISTRIBUTIONS = Path(__file__).resolve().parent / "plugins" / "distributions"


def pip_install(target: Path, *projects: Path) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            *map(str, projects),
        ],
        check=True,
        capture_output=True,
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """hello (the contrib example) and broken (fails at import), installed with pip."""
    target = tmp_path_factory.mktemp("site")
    pip_install(target, ROOT / "contrib" / "hello", DISTRIBUTIONS / "broken")
    return target


@pytest.fixture(scope="module")
def site_with_dupe(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site-dupe")
    pip_install(target, ROOT / "contrib" / "hello", DISTRIBUTIONS / "dupe")
    return target


def run(site: Path, tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {
        key: value for key, value in os.environ.items() if not key.startswith("OPENCLAW_RUNTIME_")
    }
    environment.update(
        PYTHONPATH=str(site),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        OPENCLAW_RUNTIME_STRICT_PLUGINS="0",
    )
    environment.update(env)
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, env=environment, cwd=tmp_path
    )


def plugins_json(result: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    assert result.returncode == 0, result.stderr
    return {p["name"]: p for p in json.loads(result.stdout)}


def test_installed_plugin_is_discovered_and_broken_one_reported(site, tmp_path):
    result = run(site, tmp_path, "-m", "openclaw_runtime", "plugins")
    plugins = plugins_json(result)

    assert plugins["builtin.core"]["status"] == "loaded"
    hello = plugins["hello"]
    assert hello["status"] == "loaded"
    assert hello["source"] == "entrypoint"
    assert hello["distribution"] == "openclaw-runtime-hello"
    assert hello["version"] == "0.1.0"
    assert hello["hooks"] == ["before_agent_run", "register_models", "register_providers"]
    broken = plugins["broken"]
    assert broken["status"] == "failed"
    assert broken["distribution"] == "openclaw-runtime-broken"
    assert "ModuleNotFoundError" in broken["load_error"]
    assert "nonexistent_vendor_sdk" in broken["load_error"]
    assert "skipping plugin 'broken'" in result.stderr  # the warning names plugin and cause
    assert "nonexistent_vendor_sdk" in result.stderr


def test_strict_mode_refuses_a_broken_plugin(site, tmp_path):
    result = run(
        site, tmp_path, "-m", "openclaw_runtime", "plugins", OPENCLAW_RUNTIME_STRICT_PLUGINS="1"
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert "error: plugin 'broken' (openclaw_runtime_broken.plugin) failed to load" in result.stderr
    assert "Traceback" not in result.stderr


def test_allow_list_and_disable_list_keep_plugins_from_being_imported(site, tmp_path):
    allowed = plugins_json(
        run(
            site,
            tmp_path,
            "-m",
            "openclaw_runtime",
            "plugins",
            OPENCLAW_RUNTIME_PLUGINS="hello",
            OPENCLAW_RUNTIME_STRICT_PLUGINS="1",
        )
    )
    assert allowed["hello"]["status"] == "loaded"
    assert allowed["broken"]["status"] == "blocked"
    assert allowed["broken"]["load_error"] is None

    none = plugins_json(
        run(site, tmp_path, "-m", "openclaw_runtime", "plugins", OPENCLAW_RUNTIME_PLUGINS="")
    )
    entry_points = {n: p["status"] for n, p in none.items() if p["source"] == "entrypoint"}
    assert {"hello", "broken"} <= set(entry_points)  # plugins of the test env may be listed too
    assert set(entry_points.values()) == {"blocked"}

    disabled = plugins_json(
        run(
            site,
            tmp_path,
            "-m",
            "openclaw_runtime",
            "plugins",
            OPENCLAW_RUNTIME_DISABLE_PLUGINS="broken",
            OPENCLAW_RUNTIME_STRICT_PLUGINS="1",
        )
    )
    assert disabled["broken"]["status"] == "blocked"
    assert disabled["hello"]["status"] == "loaded"


def test_duplicate_entry_point_names_are_an_error(site_with_dupe, tmp_path):
    result = run(site_with_dupe, tmp_path, "-m", "openclaw_runtime", "plugins")
    assert result.returncode == 1
    assert "entry-point name 'hello'" in result.stderr
    assert "openclaw-runtime-hello (openclaw_runtime_hello.plugin)" in result.stderr
    assert "openclaw-runtime-dupe (openclaw_runtime_dupe.plugin)" in result.stderr


def test_discovered_plugin_serves_a_run_in_a_fresh_process(site, tmp_path):
    script = (
        "import anyio\n"
        "from openclaw_runtime import Runtime\n"
        "async def main():\n"
        "    runtime = Runtime(blocked=['broken'])\n"
        "    agent = runtime.create_agent(model='greeter-latest')\n"
        "    await agent.prompt('Grace')\n"
        "    print(agent.state.messages[-1].text())\n"
        "anyio.run(main)\n"
    )
    result = run(site, tmp_path, "-c", script)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Hello, Grace!"
