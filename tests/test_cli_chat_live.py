"""``openclaw-runtime chat`` while an answer streams (issue 15 §1), as a real subprocess on
pipes: a line typed during the answer is steered into it, and SIGINT (Ctrl-C) cancels the
answer, not the chat — the partial answer is kept in the transcript as an aborted message.
The model is a ``FaultInjectingOpenAIServer`` whose ``"hold"`` fault pauses each answer until
the test has acted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer

REPO = Path(__file__).resolve().parent.parent
KEY = "sk-chat-live-test-0000"


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(chunk_chars=4) as running:
        yield running


class Lines:
    """A pipe read as it arrives, in a thread (a streamed answer has no newline until it
    ends); ``wait_for`` blocks until the text read so far contains a text."""

    def __init__(self, pipe: Any) -> None:
        self.text = ""
        self._cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, args=(pipe.fileno(),), daemon=True)
        self.thread.start()

    def _read(self, fd: int) -> None:
        while chunk := os.read(fd, 4096):
            with self._cond:
                self.text += chunk.decode("utf-8", "replace")
                self._cond.notify_all()

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def wait_for(self, text: str, timeout: float = 30.0) -> None:
        with self._cond:
            found = self._cond.wait_for(lambda: text in self.text, timeout)
        assert found, f"{text!r} never came; got {self.text!r}"


def test_chat_steers_typed_lines_and_ctrl_c_cancels_only_the_answer(
    tmp_path: Path, server: FaultInjectingOpenAIServer
) -> None:
    config = tmp_path / "c.toml"
    config.write_text(
        f'state_dir = "{tmp_path / "state"}"\n[agent]\nmodel = "srv/m1"\n'
        f'[[models]]\nid = "m1"\napi = "openai-completions"\nprovider = "srv"\n'
        f'base_url = "{server.base_url}"\n'
        f'[[auth.profiles]]\nid = "srv:a"\nprovider = "srv"\nmode = "api_key"\n'
        f'credential = "{KEY}"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_RUNTIME_")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        OPENCLAW_RUNTIME_PLUGINS="",
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    server.inject(Fault(kind="hold", after_chunks=3))
    chat = subprocess.Popen(
        [sys.executable, "-m", "openclaw_runtime", "--config", str(config), "chat", "--steer"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    assert chat.stdin is not None
    out, err = Lines(chat.stdout), Lines(chat.stderr)
    try:
        chat.stdin.write("write a poem\n")
        chat.stdin.flush()
        assert server.wait_for_held(1, timeout=60)
        chat.stdin.write("also check the CI config\n")
        chat.stdin.flush()
        err.wait_for("steered into the answer")
        server.release_holds()
        out.wait_for("You said: also check the CI config")

        # Ctrl-C while the next answer streams: the answer stops, the chat stays
        server.inject(Fault(kind="hold", after_chunks=4))
        chat.stdin.write("tell me a long story\n")
        chat.stdin.flush()
        assert server.wait_for_held(2, timeout=60)
        out.wait_for("You said: te")  # what the server sent before the hold was shown
        chat.send_signal(signal.SIGINT)
        err.wait_for("answer cancelled")
        chat.stdin.write("/session\n")
        chat.stdin.flush()
        out.wait_for("transcript: ")
        chat.stdin.write("/exit\n")
        chat.stdin.flush()
        assert chat.wait(timeout=60) == 0, err.text
    finally:
        server.release_holds()
        if chat.poll() is None:
            chat.kill()
            chat.wait()
        chat.stdin.close()
        for reader, pipe in ((out, chat.stdout), (err, chat.stderr)):
            reader.thread.join(10)
            if pipe is not None:
                pipe.close()
    users = [
        [m["content"] for m in r.body["messages"] if m["role"] == "user"] for r in server.requests
    ]
    assert users == [
        ["write a poem"],
        ["write a poem", "also check the CI config"],
        ["write a poem", "also check the CI config", "tell me a long story"],
    ]
    assert "error:" not in err.text
    # the partial answer is in the transcript, as an aborted assistant message
    transcript = next(line for line in out.lines if line.startswith("transcript: "))
    path = Path(transcript.split(": ", 1)[1].strip())
    messages = [
        json.loads(line)["message"]
        for line in path.read_text().splitlines()
        if json.loads(line).get("type") == "message"
    ]
    # (followed by the hidden interruption note the next turn reads)
    last = [m for m in messages if m["role"] == "assistant"][-1]
    assert last["stopReason"] == "aborted" and messages[-1]["role"] == "custom"
    partial = "".join(block.get("text", "") for block in last["content"])
    assert partial and "You said: tell me a long story".startswith(partial)


def test_chat_reports_a_bad_model_as_an_error_line_not_a_traceback(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCLAW_RUNTIME_")}
    env.update(
        PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
        OPENCLAW_RUNTIME_PLUGINS="",
        OPENCLAW_RUNTIME_STATE_DIR=str(tmp_path / "state"),
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "openclaw_runtime", "chat", "--steer", "--model", "nope/none"],
        env=env,
        input="hi\n",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "unknown model 'nope/none'" in done.stderr
    assert "Traceback" not in done.stderr and "ExceptionGroup" not in done.stderr
