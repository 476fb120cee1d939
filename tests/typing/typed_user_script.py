"""A host script as a user writes it, checked by mypy in ``tests/test_typed_api.py``.

Never run: mypy reads it with ``warn_unused_ignores``, so each ``# type: ignore[code]`` below
asserts that mypy reports exactly that error there (a wrong option type, an unknown option),
and each ``assert_type`` asserts what the API returns. If ``Runtime.run`` went back to
``**options: Any -> Any``, the ignores would be unused and the ``assert_type`` lines wrong.
"""

from __future__ import annotations

from typing import assert_type

from openclaw_runtime import Agent, Runtime
from openclaw_runtime.types import (
    CompactResult,
    LiveMessageResult,
    RegisterComponent,
    RegisterModel,
    RegisterPromptSection,
    RunOptions,
    RunRequest,
    RunResult,
)


async def host(runtime: Runtime) -> None:
    result = await runtime.run("hi", session_key="chat:1", timeout_s=30, max_tokens=256)
    assert_type(result, RunResult)
    assert_type(result.ok, bool)
    assert_type(result.text, str)

    await runtime.run("hi", verbose="full", trigger="cron", fallbacks=["a/b"])
    await runtime.run(request=RunRequest(prompt="hi", session_id="s1"))

    await runtime.run("hi", timeout_s="30")  # type: ignore[arg-type]
    await runtime.run("hi", max_tokens=1.5)  # type: ignore[arg-type]
    await runtime.run("hi", verbose="loud")  # type: ignore[arg-type]
    await runtime.run("hi", sesion_id="s1")  # type: ignore[call-arg]

    options: RunOptions = {"session_id": "s1", "lock_auth_profile": False}
    await runtime.run("hi", **options)
    bad: RunOptions = {"session_id": 1}  # type: ignore[typeddict-item]
    del bad

    compacted = await runtime.compact_session("s1", force=False)
    assert_type(compacted, CompactResult)
    await runtime.compact_session("s1", force="yes")  # type: ignore[arg-type]

    agent = runtime.create_agent(model="echo/echo", tool_execution="sequential")
    assert_type(agent, Agent)
    runtime.create_agent(tool_execution="sometimes")  # type: ignore[arg-type]
    runtime.create_agent(stream_options=3)  # type: ignore[arg-type]
    runtime.create_agent(before_run=None)  # type: ignore[call-arg]

    steered = await runtime.steer("look here", session_key="chat:1")
    assert_type(steered, LiveMessageResult)
    await runtime.follow_up(42, session_id="s1")  # type: ignore[arg-type]
    assert_type(await runtime.abort_run(session_id="s1", reason="user"), bool)
    assert_type(runtime.is_run_active(session_key="chat:1"), bool)
    assert_type(runtime.is_run_streaming(session_id="s1"), bool)
    assert_type(await runtime.wait_for_run_end(session_id="s1", timeout_s=1.0), bool)
    await runtime.wait_for_run_end(session_id="s1", timeout_s="1")  # type: ignore[arg-type]


def register_providers(register: RegisterComponent) -> None:
    register("acme", object())
    register("acme", object(), order=5)  # type: ignore[call-arg]


def register_models(register: RegisterModel) -> None:
    register(object(), aliases=("a",))
    register(object(), aliases="a")  # type: ignore[arg-type]


def register_prompt_sections(register: RegisterPromptSection) -> None:
    register("house_rules", lambda context: ["## House Rules"], minimal=True)
    register("house_rules", lambda context: None, minimal="yes")  # type: ignore[arg-type]
