"""The persisted plugin fault record (issue 9 §2): what one process saw, the next one shows
(``openclaw-runtime plugins``, ``doctor``) until ``plugins --clear-faults``; a damaged record
is set aside, never a crash; ``--events`` prints a line per fault and quarantine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openclaw_runtime import OpenClawRuntimeWarning, Runtime, hookimpl
from openclaw_runtime.cli import cli
from openclaw_runtime.commands.timeline import describe_event
from openclaw_runtime.containment import FaultRecord, PluginFault
from openclaw_runtime.runner.events import PluginFaultRaised, PluginQuarantined
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer

pytestmark = pytest.mark.anyio

CANARY_KEY = "sk-containment-canary-0123456789"


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as running:
        yield running


def write_config(tmp_path: Path, server: FaultInjectingOpenAIServer) -> Path:
    path = tmp_path / "openclaw-runtime.toml"
    path.write_text(
        f'state_dir = "{tmp_path / "state"}"\n'
        '[agent]\nmodel = "mock/main"\n'
        '[[models]]\nid = "main"\napi = "openai-completions"\nprovider = "mock"\n'
        f'base_url = "{server.base_url}"\ncontext_window = 64000\n'
        '[[auth.profiles]]\nid = "mock:0"\nprovider = "mock"\nmode = "api_key"\n'
        'credential = "key-a"\n'
    )
    return path


class Observer:
    """An observer that leaks a key-shaped value into its error, and always raises."""

    @hookimpl
    def on_agent_event(self, event: Any) -> None:
        raise RuntimeError(f"cannot reach https://telemetry.example/ with {CANARY_KEY}")


def cli_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        OPENCLAW_RUNTIME_STRICT_PLUGINS="0",
        OPENCLAW_RUNTIME_RAISE_ERRORS="0",
        OPENCLAW_RUNTIME_PLUGINS="",  # no entry-point plugins: only the record speaks
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    env.pop("OPENCLAW_RUNTIME_STATE_DIR", None)
    return env


def run_cli(tmp_path: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openclaw_runtime", "--config", str(config), *args],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path),
        cwd=tmp_path,
        timeout=120,
    )


async def fail_in_a_run(tmp_path: Path, config: Path) -> Any:
    from openclaw_runtime.config import RuntimeConfig

    runtime = Runtime(
        RuntimeConfig.load(config),
        plugins=[("telemetry", Observer())],
        load_entrypoints=False,
    )
    try:
        return await runtime.run("hi", session_id="s1")
    finally:
        await runtime.aclose()


async def test_faults_are_visible_from_a_new_process_until_cleared(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    config = write_config(tmp_path, server)
    result = await fail_in_a_run(tmp_path, config)
    assert result.ok and len(result.faults) == 3  # the default threshold quarantines it

    listed = run_cli(tmp_path, config, "plugins", "--json")
    assert listed.returncode == 0, listed.stderr
    plugins = {p["name"]: p for p in json.loads(listed.stdout)}
    telemetry = plugins["telemetry"]  # not loaded in this process: shown from the record
    assert telemetry["status"] == "not loaded"
    (entry,) = telemetry["faults"]
    assert (entry["hook"], entry["unit"], entry["count"], entry["quarantines"]) == (
        "on_agent_event",
        "on_agent_event",
        3,
        1,
    )
    assert "cannot reach https://telemetry.example/" in entry["error"]
    assert entry["firstAt"] <= entry["lastAt"]
    # the error text went through the redactor: the key is nowhere on disk or on screen
    assert CANARY_KEY not in listed.stdout
    for path in (tmp_path / "state").rglob("*"):
        if path.is_file():
            assert CANARY_KEY.encode() not in path.read_bytes(), path

    doctor = run_cli(tmp_path, config, "doctor", "--json")
    warnings = [r["detail"] for r in json.loads(doctor.stdout) if r["status"] == "warn"]
    assert any("telemetry failed in on_agent_event 3x, quarantined 1x" in w for w in warnings), (
        warnings
    )

    cleared = run_cli(tmp_path, config, "plugins", "--clear-faults")
    assert cleared.returncode == 0, cleared.stderr
    assert "cleared 1 plugin fault record(s)" in cleared.stdout
    listed = run_cli(tmp_path, config, "plugins", "--json")
    assert "telemetry" not in {p["name"] for p in json.loads(listed.stdout)}
    doctor = run_cli(tmp_path, config, "doctor", "--json")
    assert not [r for r in json.loads(doctor.stdout) if "telemetry" in r["detail"]]


def test_damaged_record_is_set_aside_and_named(tmp_path: Path, monkeypatch: Any) -> None:
    state = tmp_path / "state"
    (state / "plugins").mkdir(parents=True)
    damaged = b'{"version": 1, "entries": [{"plugin": "x", "hook": '
    (state / "plugins" / "faults.json").write_bytes(damaged)
    runtime = Runtime({"state_dir": str(state)}, load_entrypoints=False)
    with pytest.warns(OpenClawRuntimeWarning, match="could not be read; kept it aside as"):
        assert runtime.recorded_plugin_faults() == []
    (aside,) = runtime.fault_record.damaged_files()
    assert aside.read_bytes() == damaged  # nothing lost
    assert not (state / "plugins" / "faults.json").exists()
    # a new fault starts a fresh record
    runtime.hooks.record_fault("p", "on_agent_event", RuntimeError("boom"))
    (entry,) = runtime.recorded_plugin_faults()
    assert (entry["plugin"], entry["count"]) == ("p", 1)

    monkeypatch.setenv("OPENCLAW_RUNTIME_STATE_DIR", str(state))
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "")
    monkeypatch.setenv("OPENCLAW_RUNTIME_RAISE_ERRORS", "0")
    doctor = CliRunner().invoke(cli, ["doctor", "--json"])
    details = [r["detail"] for r in json.loads(doctor.stdout) if r["status"] == "warn"]
    assert f"damaged fault record kept aside as {aside}" in details
    assert any(d.startswith("p failed in on_agent_event 1x") for d in details)


@pytest.mark.parametrize(
    "content",
    [
        b"not json at all",
        b"[]",
        b'{"entries": {}}',
        b'{"entries": [{"plugin": 3, "hook": "h", "unit": "h", "error": "e", "count": 1,'
        b' "firstAt": 1, "lastAt": 1, "quarantines": 0}]}',
        b'{"entries": [{"plugin": "p", "hook": "h", "unit": "h", "error": "e", "count": true,'
        b' "firstAt": 1, "lastAt": 1, "quarantines": 0}]}',
        b"\xff\xfe\x00garbage",
    ],
)
def test_every_kind_of_damage_is_set_aside(tmp_path: Path, content: bytes) -> None:
    record = FaultRecord(tmp_path / "faults.json")
    record.path.write_bytes(content)
    with pytest.warns(OpenClawRuntimeWarning):
        assert record.entries() == []
    assert [p.read_bytes() for p in record.damaged_files()] == [content]


def test_record_counts_across_instances_and_clears_per_plugin(tmp_path: Path) -> None:
    first, second = FaultRecord(tmp_path / "f.json"), FaultRecord(tmp_path / "f.json")
    first.add(PluginFault("a", "on_agent_event", "RuntimeError: x", 10.0))
    second.add(PluginFault("a", "on_agent_event", "RuntimeError: y", 20.0, quarantined=True))
    second.add(PluginFault("b", "register_stream_repairers", "E", 30.0, unit="stream_repairer:r"))
    entries = first.entries()
    assert [(e["plugin"], e["count"], e["error"], e["quarantines"]) for e in entries] == [
        ("a", 2, "RuntimeError: y", 1),
        ("b", 1, "E", 0),
    ]
    assert entries[0]["firstAt"] == 10.0 and entries[0]["lastAt"] == 20.0
    assert first.clear("a") == 1
    assert [e["plugin"] for e in second.entries()] == ["b"]
    assert second.clear() == 1 and first.entries() == []


def test_events_print_one_timeline_line_each() -> None:
    fault = PluginFaultRaised(
        "telemetry", "register_stream_repairers", "stream_repairer:fix", "ValueError: bug"
    )
    assert describe_event(fault) == (
        "! plugin telemetry failed in register_stream_repairers, stream_repairer:fix "
        "(skipped): ValueError: bug"
    )
    quarantined = PluginQuarantined("telemetry", "on_agent_event", "on_agent_event", "E")
    line = describe_event(quarantined)
    assert line is not None and line.startswith("! plugin telemetry quarantined (on_agent_event)")


def test_several_processes_lose_no_count(tmp_path: Path) -> None:
    path = tmp_path / "plugins" / "faults.json"
    script = (
        "import sys\n"
        "from openclaw_runtime.containment import FaultRecord, PluginFault\n"
        "record = FaultRecord(sys.argv[1])\n"
        "for i in range(25):\n"
        "    record.add(PluginFault('p', 'on_agent_event', f'E{i}', float(i)))\n"
    )
    workers = [
        subprocess.Popen([sys.executable, "-c", script, str(path)], cwd=tmp_path) for _ in range(4)
    ]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0, 0]
    (entry,) = FaultRecord(path).entries()
    assert entry["count"] == 100
    assert FaultRecord(path).damaged_files() == []


FLAKY_PLUGIN = """
from openclaw_runtime import hookimpl


@hookimpl
def on_agent_event(event):
    raise RuntimeError("telemetry endpoint refused the event")
"""


def install_flaky_plugin(site: Path) -> None:
    """A real entry-point plugin on the interpreter's path (a dist-info, no pip needed)."""
    site.mkdir()
    (site / "flaky_observer.py").write_text(FLAKY_PLUGIN)
    info = site / "flaky_observer-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: flaky-observer\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[openclaw_runtime]\nflaky = flaky_observer\n")


def test_cli_events_show_the_fault_and_the_quarantine(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    config = write_config(tmp_path, server)
    install_flaky_plugin(tmp_path / "site")
    env = cli_env(tmp_path)
    env.pop("OPENCLAW_RUNTIME_PLUGINS")  # load the entry-point plugin
    env["PYTHONPATH"] = str(tmp_path / "site")
    command = [sys.executable, "-m", "openclaw_runtime", "--config", str(config)]
    done = subprocess.run(
        [*command, "run", "hi", "--events"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "You said: hi" in done.stdout
    assert "! plugin flaky failed in on_agent_event (skipped): RuntimeError: telemetry" in (
        done.stderr
    )
    assert "! plugin flaky quarantined (on_agent_event)" in done.stderr

    as_json = subprocess.run(
        [*command, "run", "again", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert as_json.returncode == 0, as_json.stderr
    faults = json.loads(as_json.stdout)["faults"]
    assert [(f["plugin"], f["hook"]) for f in faults] == [("flaky", "on_agent_event")] * 3
    listed = subprocess.run(
        [*command, "plugins"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    flaky = {p["name"]: p for p in json.loads(listed.stdout)}["flaky"]
    assert flaky["status"] == "loaded"
    (entry,) = flaky["faults"]
    assert (entry["count"], entry["quarantines"]) == (6, 2)  # two processes, one record


CLASHING_PLUGIN = """
from openclaw_runtime import hookimpl


async def fixer(events, context):
    async for event in events:
        yield event


@hookimpl
def register_stream_repairers(register):
    register("fixer", fixer)
"""


def test_clash_between_installed_plugins_is_a_warning_in_plugins_and_doctor(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    config = write_config(tmp_path, server)
    site = tmp_path / "site"
    site.mkdir()
    for name in ("alpha", "beta"):
        (site / f"{name}_fixer.py").write_text(CLASHING_PLUGIN)
        info = site / f"{name}_fixer-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}-fixer\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[openclaw_runtime]\n{name} = {name}_fixer\n")
    env = cli_env(tmp_path)
    env.pop("OPENCLAW_RUNTIME_PLUGINS")
    env["PYTHONPATH"] = str(site)
    command = [sys.executable, "-m", "openclaw_runtime", "--config", str(config)]
    listed = subprocess.run(
        [*command, "plugins"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert listed.returncode == 0, listed.stderr
    message = (
        "stream repairer 'fixer' is registered by both plugin 'alpha' and plugin 'beta'; "
        "using plugin 'alpha' (it loaded first"
    )
    assert message in listed.stderr  # the warning
    plugins = {p["name"]: p for p in json.loads(listed.stdout)}
    assert plugins["alpha"]["clashes"] == plugins["beta"]["clashes"]
    (clash,) = plugins["beta"]["clashes"]
    assert (clash["kept"], clash["dropped"], clash["rule"]) == ("alpha", "beta", "first")

    doctor = subprocess.run(
        [*command, "doctor", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    rows = [(r["status"], r["check"], r["detail"]) for r in json.loads(doctor.stdout)]
    assert [r for r in rows if r[1] == "plugin clash"] == [
        ("warn", "plugin clash", clash["message"])
    ]
    ran = subprocess.run(
        [*command, "run", "hi"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
    )
    assert ran.returncode == 0 and "You said: hi" in ran.stdout  # the clash stops nothing


def test_clear_faults_on_an_unusable_record_is_one_line(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    config = write_config(tmp_path, server)
    (tmp_path / "state" / "plugins" / "faults.json").mkdir(parents=True)  # not a file
    done = run_cli(tmp_path, config, "plugins", "--clear-faults")
    assert done.returncode == 1
    assert done.stderr.startswith("error: cannot clear the plugin fault record")
    assert "Traceback" not in done.stderr
    listed = run_cli(tmp_path, config, "plugins")  # listing still works
    assert listed.returncode == 0, listed.stderr


def _valid_record_bytes(tmp_path: Path) -> bytes:
    record = FaultRecord(tmp_path / "source" / "faults.json")
    record.add(PluginFault("a", "on_agent_event", "RuntimeError: x", 1.0))
    record.add(PluginFault("b", "register_stream_repairers", "E", 2.0, "stream_repairer:r", True))
    return record.path.read_bytes()


def test_record_cut_at_every_byte_loads_without_exception(tmp_path: Path) -> None:
    """The record is replaced whole (never appended), so a cut file is outside damage: it
    must never raise, and its bytes are kept aside (no partial entry is trusted)."""
    content = _valid_record_bytes(tmp_path)
    for cut in range(len(content) + 1):
        record = FaultRecord(tmp_path / f"cut-{cut}" / "faults.json")
        record.path.parent.mkdir()
        record.path.write_bytes(content[:cut])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", OpenClawRuntimeWarning)
            entries = record.entries()
        if cut == len(content) or cut == len(content) - 1:  # whole (the newline is optional)
            assert [e["plugin"] for e in entries] == ["a", "b"]
        elif cut == 0:
            assert entries == []
        else:
            assert entries == [], cut
            assert [p.read_bytes() for p in record.damaged_files()] == [content[:cut]]


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=400) | st.text(max_size=300).map(str.encode))
def test_any_bytes_in_the_record_never_raise(tmp_path: Path, data: bytes) -> None:
    record = FaultRecord(tmp_path / f"fuzz-{os.urandom(6).hex()}" / "faults.json")
    record.path.parent.mkdir()
    record.path.write_bytes(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", OpenClawRuntimeWarning)
        entries = record.entries()
        record.add(PluginFault("p", "h", "e", 1.0))  # a damaged record never blocks a new fault
    assert isinstance(entries, list)
    assert any(e["plugin"] == "p" for e in record.entries())
