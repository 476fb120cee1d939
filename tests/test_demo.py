"""``openclaw-runtime demo``: a real session over real HTTP, offline, on core dependencies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from openclaw_runtime.cli import cli
from openclaw_runtime.demo import PROFILES

KEYS = [key for _, key, _ in PROFILES]


def test_demo_shows_rotation_tool_call_compaction_and_the_transcript(tmp_path):
    result = CliRunner().invoke(cli, ["demo", "--state-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    out = result.stdout
    lines = [line.strip() for line in out.splitlines()]
    # turn 1: the first key is rate limited, the run rotates to the second
    assert "✗ attempt 1 failed (rate_limit): 429 Rate limit reached" in out
    assert (
        "↻ rotated auth profile demo:primary → demo:backup "
        "(rate_limit; demo:primary marked rate_limit on the ledger)" in lines
    )
    assert "assistant ▸ You said: Hi! I'm planning a weekend in Lisbon." in lines
    # turn 2: a tool call answered from its result
    assert '⚙ tool call get_weather(city="Lisbon")' in lines
    assert any(line.startswith('⚙ get_weather → {"city": "Lisbon", "temp_c": 21') for line in lines)
    assert any(line.startswith("assistant ▸ The get_weather tool returned:") for line in lines)
    # turn 4: the server's real window overflows, the run compacts and retries
    assert "✗ attempt 1 failed (context_overflow): 400 This model's maximum context length" in out
    assert any(line.startswith("⇣ compacted ") and line.endswith(" tokens") for line in lines)
    before, after = (
        int(n.replace(",", ""))
        for n in next(line for line in lines if line.startswith("⇣ compacted "))
        .removeprefix("⇣ compacted ")
        .removesuffix(" tokens")
        .split(" → ")
    )
    assert after < before
    assert any(line.startswith("assistant ▸ You said: And the packing list") for line in lines)
    # the summary: transcript, ledger, usage
    transcript = next(line for line in lines if line.startswith("transcript"))
    path = Path(transcript.split()[-1])
    assert path.is_file() and path.is_relative_to(tmp_path / "sessions")
    assert any(
        line.startswith("ledger") and "demo:primary" in line and "cooling down until" in line
        for line in lines
    )
    assert any(line.startswith("demo:backup") and line.endswith("healthy") for line in lines)
    assert any(
        line.startswith("usage") and "input" in line and "output tokens" in line for line in lines
    )
    assert lines[-1].startswith("done        every turn answered in ")
    for key in KEYS:
        assert key not in result.output


def test_demo_json_prints_events_and_a_summary(tmp_path):
    result = CliRunner().invoke(cli, ["demo", "--json", "--state-dir", str(tmp_path)])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in result.stdout.splitlines()]
    summary = records[-1]
    assert summary["type"] == "demo_summary"
    assert summary["ok"] is True
    assert summary["compactions"] == 1
    assert summary["httpRequests"]["rate_limited"] == 1
    assert summary["httpRequests"]["overflow"] == 1
    assert summary["httpRequests"]["tool_call"] == 1
    assert Path(summary["transcript"]).is_file()
    types = {(r.get("turn"), r["type"]) for r in records[:-1]}
    assert (1, "profile_rotated") in types
    assert (2, "tool_execution_start") in types
    assert (4, "compaction_end") in types
    assert not any(r["type"] == "message_update" for r in records)
    for key in KEYS:
        assert key not in result.output


def test_python_m_demo_runs_without_pytest(tmp_path):
    code = (
        "import runpy, sys\n"
        "sys.modules['pytest'] = None  # import pytest now fails\n"
        f"sys.argv = ['openclaw-runtime', 'demo', '--state-dir', {str(tmp_path)!r}]\n"
        "runpy.run_module('openclaw_runtime', run_name='__main__')\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert "rotated auth profile demo:primary → demo:backup" in proc.stdout
    assert "every turn answered" in proc.stdout
