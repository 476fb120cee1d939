"""Bad state on disk never takes runs down (issue 9 §4, §5): damaged state files are set
aside by one shared helper, stale temp files of killed writers are cleaned up, and the CLI
keeps working — checked as a user would, with the real ``openclaw-runtime`` executable.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from openclaw_runtime._files import (
    STALE_TEMP_AGE_S,
    DamagedStateFile,
    find_set_aside_files,
    is_stale_temp,
    load_or_set_aside,
    remove_stale_temps,
    set_aside_damaged,
    temp_writer,
)
from openclaw_runtime.auth.json_file import JsonFileAuthProfileStore
from openclaw_runtime.runner.session_index import SessionIndex
from openclaw_runtime.runner.steering_store import JsonFileSteeringStore
from openclaw_runtime.transcript import JsonlSessionStore

# --------------------------------------------------------------------------- policies


@pytest.mark.parametrize(
    ("pid", "age", "alive", "stale"),
    [
        (4242, 0.0, False, True),  # its writer is gone
        (4242, 0.0, True, False),  # its writer may still be writing
        (4242, STALE_TEMP_AGE_S, True, True),  # no write takes an hour: pid was reused
        (os.getpid(), 0.0, True, False),  # ours: in flight in another thread
        (os.getpid(), STALE_TEMP_AGE_S + 1, True, True),
    ],
)
def test_stale_temp_policy(pid, age, alive, stale):
    assert is_stale_temp(pid, age, own_pid=os.getpid(), alive=lambda _: alive) is stale


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("runs.json.steering-123-0a1b2c3d.tmp", ("runs.json", 123)),
        ("s1.jsonl.rewrite-9-ffffffff.tmp", ("s1.jsonl", 9)),
        ("a.b.c.json.auth-77-00000000.tmp", ("a.b.c.json", 77)),
        ("runs.json.steering-123-0a1b2c3.tmp", None),  # not our shape: never touched
        ("runs.json.tmp", None),
        ("notes-1-0a1b2c3d.tmp", None),
        ("s1.jsonl", None),
    ],
)
def test_temp_names_carry_their_writer(name, parsed):
    assert temp_writer(name) == parsed


def test_set_aside_only_moves_the_bytes_that_were_read(tmp_path):
    path = tmp_path / "index.json"
    path.write_bytes(b"{broken")
    assert set_aside_damaged(path, b"{other") is None  # replaced meanwhile: left alone
    assert path.read_bytes() == b"{broken"
    aside = set_aside_damaged(path, b"{broken")
    assert aside is not None and aside.read_bytes() == b"{broken" and not path.exists()
    assert find_set_aside_files([tmp_path, tmp_path / "missing"]) == [aside]


def test_load_or_set_aside_reads_again_when_a_writer_replaced_the_file(tmp_path):
    path = tmp_path / "state.json"
    path.write_bytes(b"damaged")
    calls = []

    def parse(data: bytes) -> bytes:
        calls.append(data)
        if data == b"damaged":
            path.write_bytes(b"fresh")  # another process repaired it between read and lock
            raise DamagedStateFile("not valid")
        return data

    logger = logging.getLogger("test.setaside")
    assert load_or_set_aside(path, parse, bytes, what="state", logger=logger) == b"fresh"
    assert calls == [b"damaged", b"fresh"] and path.read_bytes() == b"fresh"
    assert find_set_aside_files([tmp_path]) == []


# --------------------------------------------------------------------------- killed writers

WRITER = r"""
import os, sys, time
from openclaw_runtime import _files
def stall(src, dst):
    print("ready", flush=True)
    time.sleep(600)
_files.os.replace = stall
_files.atomic_write(sys.argv[1], b'{"half": "written"}', tag=sys.argv[2])
"""


def writer_stuck_mid_write(target: Path, tag: str) -> subprocess.Popen[str]:
    """A real process that wrote its temp file and stalls before ``os.replace``."""
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(target), tag], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_temps_of_killed_writers_are_removed_when_each_store_opens(tmp_path):
    state = tmp_path / "state"
    (state / "sessions").mkdir(parents=True)
    (state / "subagents").mkdir()
    targets = {
        "auth": state / "auth-profiles.json",
        "index": state / "sessions" / "index.json",
        "steering": state / "subagents" / "runs.json",
        "rewrite": state / "sessions" / "s1.jsonl",
    }
    for tag, target in targets.items():
        process = writer_stuck_mid_write(target, tag)
        process.send_signal(signal.SIGKILL)
        process.wait()  # reaped: the pid is gone
        assert process.stdout is not None
        process.stdout.close()
    live = writer_stuck_mid_write(targets["auth"], "auth")  # still writing: must be kept
    try:
        assert len(temps(state)) == 2 and len(temps(state / "sessions")) == 2

        JsonFileAuthProfileStore(targets["auth"]).load_sync()
        (kept,) = temps(state)  # the killed writer's temp is gone, the live one's is not
        assert temp_writer(kept) == ("auth-profiles.json", live.pid)
        SessionIndex(targets["index"]).entries_sync()
        JsonFileSteeringStore(targets["steering"]).load_sync()
        assert temps(state / "subagents") == []
        assert len(temps(state / "sessions")) == 1  # the transcript's: its store not opened yet
        store = JsonlSessionStore(state / "sessions")
        anyio.run(functools.partial(store.open_or_create, "s2", cwd="/w"))
        assert temps(state / "sessions") == []
        assert temps(state) == [kept]

        # once it is older than any write could take, even a live pid's temp goes
        (live_temp,) = state.glob("*.tmp")
        old = time.time() - STALE_TEMP_AGE_S - 5
        os.utime(live_temp, (old, old))
        assert remove_stale_temps(state) == [live_temp]
    finally:
        live.kill()
        live.wait()
        assert live.stdout is not None
        live.stdout.close()


# --------------------------------------------------------------------------- the CLI, as a user

EXECUTABLE = shutil.which("openclaw-runtime", path=str(Path(sys.executable).parent))
DAMAGE = {
    "auth-profiles.json": b'{"profiles": {"x": {"key": "sk-DAMAGED-0000',
    "sessions/index.json": b'{"version": 1, "sessions": [',
    "subagents/runs.json": b"\x00\x01 not json",
}


def cli(state: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    assert EXECUTABLE is not None
    env = {
        **os.environ,
        "OPENCLAW_RUNTIME_STATE_DIR": str(state),
        "OPENCLAW_RUNTIME_RAISE_ERRORS": "0",
    }
    env.pop("OPENCLAW_RUNTIME_CONFIG", None)
    return subprocess.run(
        [EXECUTABLE, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=state.parent,
        timeout=120,
    )


@pytest.mark.parametrize("damaged", sorted(DAMAGE))
def test_every_command_works_with_a_damaged_state_file(tmp_path, damaged):
    state = tmp_path / "state"
    first = cli(state, "run", "--model", "echo", "--session-key", "me", "hello")
    assert first.returncode == 0, first.stderr
    target = state / damaged
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(DAMAGE[damaged])

    run = cli(state, "run", "--model", "echo", "--session-key", "me", "again")
    assert run.returncode == 0, run.stderr
    assert "echo: again" in run.stdout
    assert "Traceback" not in run.stderr
    (aside,) = find_set_aside_files([target.parent])
    assert aside.read_bytes() == DAMAGE[damaged]
    assert f"{target} is damaged" in run.stderr and aside.name in run.stderr
    assert "sk-DAMAGED" not in run.stdout + run.stderr

    target.write_bytes(DAMAGE[damaged])  # damaged again before each command
    chat = cli(state, "chat", "--model", "echo", stdin="hi there\n/exit\n")
    assert chat.returncode == 0 and "Traceback" not in chat.stderr, chat.stderr
    assert "echo: hi there" in chat.stdout

    target.write_bytes(DAMAGE[damaged])
    listing = cli(state, "sessions", "list")
    assert listing.returncode == 0 and "Traceback" not in listing.stderr, listing.stderr

    target.write_bytes(DAMAGE[damaged])
    doctor = cli(state, "doctor")
    assert doctor.returncode == 0 and "Traceback" not in doctor.stderr, doctor.stderr
    rows = [line for line in doctor.stdout.splitlines() if "set-aside file" in line]
    assert len(rows) == len(find_set_aside_files([target.parent])) >= 2
    assert all(row.startswith("warn") for row in rows)
    assert "sk-DAMAGED" not in doctor.stdout + doctor.stderr


def test_every_command_reports_a_config_with_invalid_utf8_in_one_line(tmp_path):
    state = tmp_path / "state"
    state.mkdir()
    (tmp_path / "openclaw-runtime.toml").write_bytes(b'[agent]\nmodel = "ech\xff"\n')
    for args, code in (
        (("run", "--model", "echo", "hi"), 2),
        (("chat",), 2),
        (("sessions", "list"), 2),
        (("doctor",), 1),
    ):
        result = cli(state, *args, stdin="/exit\n")
        assert result.returncode == code, (args, result.stderr)
        output = result.stdout + result.stderr
        assert "Traceback" not in output
        assert "not UTF-8 text" in output and "openclaw-runtime.toml" in output
