"""The CLI's finish (issue 14 §6): readable stderr lines, coloured only on a terminal; the
usage line after a run and after every chat turn (with the cost of a priced model); a spinner
that comes back after a no-op compaction; ``chat`` exit codes.

The policies are pure functions tested by tables; the behaviour is checked on the real
program: ``python -m openclaw_runtime`` in a subprocess, talking HTTP to a
``FaultInjectingOpenAIServer`` on 127.0.0.1, its stderr on a pipe or on a pseudo-terminal.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from openclaw_runtime.commands.chat import chat_exit_code
from openclaw_runtime.commands.invocation import program_command
from openclaw_runtime.commands.progress import WAITING_FOR_MODEL, Status, next_status
from openclaw_runtime.commands.run import turn_usage_line
from openclaw_runtime.commands.style import colour_enabled, line_style
from openclaw_runtime.messages import Cost, Usage
from openclaw_runtime.testing import Fault, FaultInjectingOpenAIServer

REPO = Path(__file__).resolve().parent.parent
#: An SGR sequence that sets a foreground colour (what NO_COLOR and pipes must not get).
COLOUR_CODE = re.compile(r"\x1b\[(?:\d+;)*(?:3[0-7]|9[0-7]|38)(?:;\d+)*m")


# --- the policies, by table -------------------------------------------------------------


@pytest.mark.parametrize(
    ("is_terminal", "env", "expected"),
    [
        (True, {}, True),
        (False, {}, False),
        (True, {"NO_COLOR": "1"}, False),
        (True, {"NO_COLOR": ""}, True),  # no-color.org: set *and* not empty
        (True, {"TERM": "dumb"}, False),
        (False, {"FORCE_COLOR": "1"}, True),
        (True, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False),  # NO_COLOR always wins
    ],
)
def test_colour_enabled(is_terminal: bool, env: dict[str, str], expected: bool) -> None:
    assert colour_enabled(is_terminal, env) is expected


@pytest.mark.parametrize(
    ("line", "style"),
    [
        ("✗ attempt 1 failed (rate_limit): 429", "bold red"),
        ("✓ done after 1 attempt on srv/m1", "green"),
        ("↻ rotated auth profile a → b", "yellow"),
        ("⇣ compacted 3,850 → 778 tokens", "magenta"),
        ("· attempt 1: srv/m1", "dim"),
        ("▸ run 1234 · session x", "bold"),
        ("error: the run failed (network): …", "bold red"),
        ("usage: 1 in · 2 out · 0 cache read · 0 cache write · 3 total", "dim"),
        ("LLM request failed.", None),
        ("", None),
    ],
)
def test_line_style(line: str, style: str | None) -> None:
    assert line_style(line) == style


def _event(**fields: Any) -> SimpleNamespace:
    return SimpleNamespace(**fields)


def _labels(*steps: tuple[str, Any]) -> list[str | None]:
    status, labels = Status(), []
    for event_type, event in steps:
        status = next_status(status, event_type, event)
        labels.append(status.label)
    return labels


ATTEMPT = ("attempt_start", _event(provider="srv", model="m1"))


@pytest.mark.parametrize(
    ("steps", "labels"),
    [
        # the bug: a no-op compaction inside an attempt hid the spinner until the first token
        (
            [ATTEMPT, ("compaction_start", None), ("compaction_end", None)],
            ["waiting for srv/m1…", "compacting the session…", "waiting for srv/m1…"],
        ),
        # a compaction after a tool waits for the model again
        (
            [
                ("tool_execution_start", _event(tool_name="grep")),
                ("compaction_start", None),
                ("compaction_start", None),  # nested: still back to the running tool
                ("compaction_end", None),
            ],
            [
                "running grep…",
                "compacting the session…",
                "compacting the session…",
                "running grep…",
            ],
        ),
        # after the answer started, a compaction falls back to waiting for the model
        (
            [ATTEMPT, ("text_delta", None), ("compaction_start", None), ("compaction_end", None)],
            ["waiting for srv/m1…", None, "compacting the session…", WAITING_FOR_MODEL],
        ),
        (
            [ATTEMPT, ("retry_scheduled", _event(delay_ms=1500)), ("run_end", None)],
            ["waiting for srv/m1…", "retrying in 1.5 s…", None],
        ),
        (
            [ATTEMPT, ("lane_wait", None), ("tool_execution_end", None)],
            ["waiting for srv/m1…", "waiting for srv/m1…", WAITING_FOR_MODEL],
        ),
    ],
)
def test_spinner_labels(steps: list[tuple[str, Any]], labels: list[str | None]) -> None:
    assert _labels(*steps) == labels


@pytest.mark.parametrize(
    ("succeeded", "failed", "code"),
    [(0, 0, 0), (0, 1, 1), (0, 3, 1), (1, 0, 0), (1, 5, 0), (2, 0, 0)],
)
def test_chat_exit_code(succeeded: int, failed: int, code: int) -> None:
    assert chat_exit_code(succeeded, failed) == code


def _result(ok: bool, tokens: int, cost: float = 0.0) -> Any:
    usage = Usage(input=tokens, output=0, total_tokens=tokens, cost=Cost(total=cost))
    return SimpleNamespace(ok=ok, usage=usage)


@pytest.mark.parametrize(
    ("ok", "tokens", "cost", "expected"),
    [
        (True, 0, 0.0, "usage: 0 in · 0 out · 0 cache read · 0 cache write · 0 total"),
        (True, 12, 0.5, "usage: 12 in · 0 out · 0 cache read · 0 cache write · 12 total · $0.5000"),
        (False, 0, 0.0, None),  # nothing was spent: only the error is news
        (False, 7, 0.0, "usage: 7 in · 0 out · 0 cache read · 0 cache write · 7 total"),
    ],
)
def test_turn_usage_line(ok: bool, tokens: int, cost: float, expected: str | None) -> None:
    assert turn_usage_line(_result(ok, tokens, cost)) == expected


# --- the real program -------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(chunk_chars=4) as running:
        yield running


def _config(tmp_path: Path, base_url: str, *, window: int | None = None) -> Path:
    path = tmp_path / "c.toml"
    text = (
        '[agent]\nmodel = "srv/m1"\n'
        f'[[models]]\nid = "m1"\napi = "openai-completions"\nprovider = "srv"\n'
        f'base_url = "{base_url}"\ncost = {{ input = 2.5, output = 10 }}\n'
    )
    if window is not None:
        text += f"contextWindow = {window}\nmaxTokens = 1000\n"
    path.write_text(text)
    return path


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("OPENCLAW_RUNTIME_") and k not in ("NO_COLOR", "FORCE_COLOR")
    }
    env.update(
        PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        OPENCLAW_RUNTIME_PLUGINS="",
        OPENCLAW_RUNTIME_STATE_DIR=str(tmp_path / "state"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        TERM="xterm-256color",
        **extra,
    )
    return env


def _cli(config: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "openclaw_runtime", "--config", str(config), *args]


USAGE_LINE = re.compile(
    r"^usage: \d+ in · \d+ out · \d+ cache read · \d+ cache write · \d+ total · \$\d+\.\d{4}$"
)


def test_piped_run_prints_plain_lines_and_a_priced_usage_line(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    config = _config(tmp_path, server.base_url)
    done = subprocess.run(
        _cli(config, "run", "--events", "Hello"),
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "You said: Hello\n"
    assert "\x1b" not in done.stderr and "\x1b" not in done.stdout  # plain when piped
    lines = done.stderr.splitlines()
    assert lines[0].startswith("▸ run ") and "✓ done after 1 attempt on srv/m1" in lines
    assert USAGE_LINE.match(lines[-1]), lines[-1]  # the model is priced: the cost is there


def test_chat_prints_usage_after_each_turn_and_exits_0_when_one_turn_worked(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    server.inject(Fault(kind="status", status=400, times=1))  # the first turn fails
    done = subprocess.run(
        _cli(_config(tmp_path, server.base_url), "chat", "--no-steer"),
        env=_env(tmp_path),
        input="hi\nagain\nthird\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["You said: again", "You said: third"]
    lines = done.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1 and "400" in errors[0]
    assert [line for line in lines if USAGE_LINE.match(line)] == lines[-2:]  # one a success
    assert "\x1b" not in done.stderr


def test_chat_exits_1_when_every_turn_failed(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    server.inject(Fault(kind="status", status=400, times=2))
    done = subprocess.run(
        _cli(_config(tmp_path, server.base_url), "chat", "--no-steer"),
        env=_env(tmp_path),
        input="hi\n/session\nagain\n",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert len([line for line in done.stderr.splitlines() if line.startswith("error: ")]) == 2
    assert not any(line.startswith("usage: ") for line in done.stderr.splitlines())
    assert done.stdout.startswith("session ")  # the commands still ran


# --- on a terminal ----------------------------------------------------------------------


class TerminalOutput:
    """Everything written to a pseudo-terminal's master side, read in a thread;
    ``wait_for`` blocks until a predicate holds over what was read."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.text = ""
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(fd,), daemon=True)
        self._thread.start()

    def _read(self, fd: int) -> None:
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the slave side closed
                chunk = b""
            with self._cond:
                if not chunk:
                    self._cond.notify_all()
                    return
                self.text += chunk.decode("utf-8", "replace")
                self._cond.notify_all()

    def wait_for(self, check: Any, timeout: float = 60.0) -> None:
        with self._cond:
            found = self._cond.wait_for(lambda: check(self.text), timeout)
        assert found, f"never came; got {self.text[-2000:]!r}"

    def finish(self) -> str:
        """The whole output, once the program closed the terminal."""
        self._thread.join(timeout=30)
        os.close(self.fd)
        return self.text


def _on_terminal(
    command: list[str], env: dict[str, str], stdin: str = ""
) -> tuple[subprocess.Popen[str], TerminalOutput]:
    """``command`` with stderr on a pseudo-terminal, stdout on a pipe, ``stdin`` as input."""
    pty = pytest.importorskip("pty")
    master, slave = pty.openpty()
    process = subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=slave,
        text=True,
    )
    os.close(slave)
    assert process.stdin is not None
    process.stdin.write(stdin)
    process.stdin.close()
    return process, TerminalOutput(master)


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
@pytest.mark.parametrize("no_color", [False, True])
def test_event_lines_are_coloured_on_a_terminal_unless_no_color(
    tmp_path: Path, server: FaultInjectingOpenAIServer, no_color: bool
) -> None:
    env = _env(tmp_path, **({"NO_COLOR": "1"} if no_color else {}))
    config = _config(tmp_path, server.base_url)
    process, terminal = _on_terminal(_cli(config, "run", "--events", "Hello"), env)
    assert process.stdout is not None
    with process.stdout:
        stdout = process.stdout.read()
    assert process.wait(timeout=120) == 0
    text = terminal.finish()
    assert stdout == "You said: Hello\n"  # stdout is a pipe: the answer stays plain
    assert "✓ done after 1 attempt on srv/m1" in text and "usage: " in text
    if no_color:
        assert not COLOUR_CODE.search(text), text
    else:
        assert "\x1b[32m✓ done after 1 attempt on srv/m1" in text  # green success
        assert "\x1b[2musage: " in text  # the usage line is dimmed


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_the_spinner_stays_after_a_no_op_compaction(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    # a first prompt above the 16k window's budget: the attempt compacts preemptively, finds
    # no history to summarize (a no-op), then waits for the model — which the server holds
    server.inject(Fault(kind="hold", after_chunks=0))
    config = _config(tmp_path, server.base_url, window=16_000)
    command = _cli(config, "run", "--events", "-")
    process, terminal = _on_terminal(command, _env(tmp_path), stdin="word " * 12_000)
    try:
        terminal.wait_for(lambda text: "· nothing compacted" in text)
        assert server.wait_for_held(1, timeout=60)
        # from here the run only waits: the spinner must keep redrawing its label
        label = "waiting for srv/m1…"
        with terminal._cond:
            start = len(terminal.text)
        terminal.wait_for(lambda text: text[start:].count(label) >= 3)
    finally:
        server.release_holds()
        assert process.stdout is not None
        with process.stdout:
            stdout = process.stdout.read()
        process.wait(timeout=120)
    text = terminal.finish()
    assert process.returncode == 0, text
    assert stdout.startswith("You said: word word")
    assert "compacting the session…" in text or "nothing compacted" in text


# --- hints name the program as it was started -------------------------------------------


@pytest.mark.parametrize(
    ("argv0", "on_path", "expected"),
    [
        (".venv/bin/openclaw-runtime", None, ".venv/bin/openclaw-runtime"),
        (
            "/srv/app/.venv/bin/openclaw-runtime",
            "/usr/bin/openclaw-runtime",
            "/srv/app/.venv/bin/openclaw-runtime",
        ),
        (
            "/srv/app/.venv/bin/openclaw-runtime",
            "/srv/app/.venv/bin/openclaw-runtime",
            "openclaw-runtime",
        ),
        (r"C:\venv\Scripts\openclaw-runtime.exe", None, r"C:\venv\Scripts\openclaw-runtime.exe"),
        (
            "/srv/app/openclaw_runtime/__main__.py",
            "/usr/bin/openclaw-runtime",
            "/v/python -m openclaw_runtime",
        ),
    ],
)
def test_program_command(argv0: str, on_path: str | None, expected: str) -> None:
    assert program_command(argv0, on_path, "/v/python") == expected


def test_the_demo_hint_runs_without_an_activated_venv(tmp_path: Path) -> None:
    script = Path(sys.executable).parent / "openclaw-runtime"
    if not script.is_file():
        pytest.skip("the openclaw-runtime script is not installed beside this interpreter")
    env = _env(tmp_path)
    env["PATH"] = os.pathsep.join(  # as in a shell where the venv is not activated
        p for p in env.get("PATH", "").split(os.pathsep) if Path(p) != script.parent
    )
    demo = subprocess.run(
        [str(script), "demo", "--state-dir", str(tmp_path / "demo")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert demo.returncode == 0, demo.stderr
    hint = next(line for line in demo.stdout.splitlines() if "read it: " in line)
    command = hint.split("read it: ", 1)[1]
    assert f"{script} sessions show demo:lisbon-trip" in command
    variable, rest = command.split(" ", 1)
    name, value = variable.split("=", 1)
    shown = subprocess.run(
        rest.split(" "), env={**env, name: value}, capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    assert "user ▸ Hi! I'm planning a weekend in Lisbon." in shown.stdout
