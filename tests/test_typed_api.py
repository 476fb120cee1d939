"""The typed public API: ``Runtime.run``'s options, unknown keywords, and what mypy sees.

* ``RunOptions`` / ``AgentOptions`` stay in step with ``RunRequest`` / ``Agent`` (names and
  types), so no option the run path accepts is lost from the typed signature;
* every option reaches the ``RunRequest`` unchanged, and a real run on the echo model takes
  them; an unknown keyword is a ``TypeError`` naming it (with the closest name), before any
  run starts;
* ``tests/typing/typed_user_script.py`` passes ``mypy --strict --warn-unused-ignores``: its
  ``# type: ignore[code]`` lines assert that a wrong option type is a mypy error.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Agent, Runtime
from openclaw_runtime.agent.options import AGENT_OPTION_NAMES, AgentOptions
from openclaw_runtime.context.engine import CompactResult
from openclaw_runtime.runner import run as run_module
from openclaw_runtime.runner.request import RunRequest, RunResult
from openclaw_runtime.runner.run_options import (
    RUN_OPTION_NAMES,
    RunOptions,
    reject_unknown_options,
)

ROOT = Path(__file__).resolve().parent.parent
USER_SCRIPT = ROOT / "tests" / "typing" / "typed_user_script.py"

#: ``Agent.__init__`` keywords ``create_agent`` sets itself rather than forwarding.
DECIDED_BY_CREATE_AGENT = {"model", "system_prompt", "tools", "before_run"}


def test_run_options_are_the_run_request_fields_with_the_same_types() -> None:
    fields = {f.name for f in dataclasses.fields(RunRequest)} - {"prompt"}
    assert set(RUN_OPTION_NAMES) == fields
    request_types = typing.get_type_hints(RunRequest)
    option_types = typing.get_type_hints(RunOptions)
    mismatched = {n: (option_types[n], request_types[n]) for n in fields}
    assert {n: t for n, t in mismatched.items() if t[0] != t[1]} == {}


def test_agent_options_are_the_agent_keywords_create_agent_forwards() -> None:
    parameters = inspect.signature(Agent.__init__).parameters
    forwarded = {n for n, p in parameters.items() if p.kind is p.KEYWORD_ONLY}
    assert set(AGENT_OPTION_NAMES) == forwarded - DECIDED_BY_CREATE_AGENT
    agent_types = typing.get_type_hints(Agent.__init__)
    option_types = typing.get_type_hints(AgentOptions)
    assert {n: option_types[n] for n in AGENT_OPTION_NAMES} == {
        n: agent_types[n] for n in AGENT_OPTION_NAMES
    }


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"session_id"}, None),
        (set(), None),
        ({"sesion_id"}, "unexpected keyword argument 'sesion_id' (did you mean 'session_id'?)"),
        ({"zzz"}, "unexpected keyword argument 'zzz'"),
        (
            {"zzz", "session_id", "timeout"},
            "arguments 'timeout' (did you mean 'timeout_s'?), 'zzz'",
        ),
    ],
)
def test_reject_unknown_options(given: set[str], message: str | None) -> None:
    known = {"session_id", "timeout_s", "model"}
    if message is None:
        reject_unknown_options("f()", given, known)
        return
    with pytest.raises(TypeError) as raised:
        reject_unknown_options("f()", given, known)
    assert str(raised.value).startswith("f() got an unexpected keyword")
    assert message in str(raised.value)


def echo_runtime(tmp_path: Path) -> Runtime:
    return Runtime(
        {"state_dir": str(tmp_path / "state"), "agent": {"model": "echo/echo"}},
        load_entrypoints=False,
    )


#: A non-default value for every option (each passes ``RunRequest``'s validation).
EVERY_OPTION: dict[str, Any] = {
    "session_id": "s-typed",
    "session_key": "typed:key",
    "model": "echo/echo",
    "provider": "echo",
    "fallbacks": ["echo/echo"],
    "thinking_level": "low",
    "system_prompt": "Be brief.",
    "tools": (),
    "images": (),
    "trigger": "manual",
    "input_provenance": {"source": "test"},
    "timeout_s": 12.5,
    "idle_timeout_s": 3.0,
    "auth_profile": "echo:a",
    "lock_auth_profile": True,
    "lane": "typed-lane",
    "abort_signal": None,
    "run_id": "run-typed",
    "messaging_tool_sent_texts": ["sent"],
    "current_message_id": "m-1",
    "max_tokens": 77,
    "sender_id": "u-1",
    "sender_is_owner": True,
    "group_id": "g-1",
    "block_streaming": True,
    "on_block_reply": print,
    "verbose": "full",
}


def test_every_option_is_listed_above() -> None:
    assert set(EVERY_OPTION) == set(RUN_OPTION_NAMES)


@pytest.mark.anyio
async def test_every_option_reaches_the_run_request_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[RunRequest] = []

    sentinel: Any = object()

    async def capture(host: Any, request: RunRequest, *, on_event: Any = None) -> Any:
        seen.append(request)
        return sentinel

    # Runtime.run imports the runner on its first call (start-up time): patch it at home
    monkeypatch.setattr(run_module, "run_embedded_agent", capture)
    runtime = echo_runtime(tmp_path)
    assert await runtime.run("hello", **EVERY_OPTION) is sentinel
    (request,) = seen
    assert request.prompt == "hello"
    assert {name: getattr(request, name) for name in EVERY_OPTION} == EVERY_OPTION


@pytest.mark.anyio
async def test_a_real_run_takes_typed_options_and_returns_a_run_result(tmp_path: Path) -> None:
    async with echo_runtime(tmp_path) as runtime:
        result = await runtime.run(
            "typed hello", session_key="typed:1", timeout_s=30, max_tokens=64, trigger="manual"
        )
        assert isinstance(result, RunResult)
        assert result.ok, result.error
        assert result.session_key == "typed:1"
        assert "typed hello" in result.text
        compacted = await runtime.compact_session(session_key="typed:1", force=False)
        assert isinstance(compacted, CompactResult)


@pytest.mark.anyio
async def test_an_unknown_option_is_a_type_error_naming_it_and_no_run_starts(
    tmp_path: Path,
) -> None:
    async with echo_runtime(tmp_path) as runtime:
        with pytest.raises(TypeError, match=r"runtime\.run\(\).*'sesion_key'.*'session_key'"):
            await runtime.run("hello", sesion_key="typed:2")  # type: ignore[call-arg]
        assert list((tmp_path / "state").glob("sessions/*.jsonl")) == []
        with pytest.raises(TypeError, match=r"create_agent\(\).*'before_run'"):
            runtime.create_agent(before_run=None)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match=r"create_agent\(\).*'tool_exec'"):
            runtime.create_agent(tool_exec="parallel")  # type: ignore[call-arg]


@pytest.mark.anyio
async def test_create_agent_forwards_its_options(tmp_path: Path) -> None:
    async with echo_runtime(tmp_path) as runtime:
        agent = runtime.create_agent(
            tool_execution="sequential", steering_mode="all", thinking_level="high"
        )
        assert (agent.tool_execution, agent.steering_queue.mode) == ("sequential", "all")
        assert agent.state.thinking_level == "high"


def test_a_typed_user_script_passes_mypy_and_wrong_option_types_are_errors() -> None:
    mypy_api = pytest.importorskip("mypy.api")
    stdout, stderr, status = mypy_api.run(
        [
            "--strict",
            "--warn-unused-ignores",
            "--no-error-summary",
            "--config-file",
            str(ROOT / "pyproject.toml"),
            "--cache-dir",
            str(ROOT / ".mypy_cache"),
            str(USER_SCRIPT),
        ]
    )
    assert status == 0, stdout + stderr
