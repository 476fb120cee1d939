"""At an attempt's end the session's caches forget the attempt's own (kernel) messages.

The incremental sanitizer's tool-loop cache and the projection memo hold the message objects
of the attempt's requests. The next attempt starts from the session's models (other objects),
so those can never be found again; ``release_attempt_caches`` drops them and keeps what a
later request can reuse (the sanitizer's cached prefix, the projections of the attempt's
starting history). Each table compares the released caches with kept ones and with the full
computation: same outputs, the same reuse, the same checkpoint prefix.
"""

from __future__ import annotations

import gc
import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime, tool
from openclaw_runtime.agent.convert import PrefixConverter
from openclaw_runtime.context.guard import ProjectionMemo
from openclaw_runtime.messages import TextContent, ToolResultMessage, UserMessage
from openclaw_runtime.runner import attempt as attempt_module
from openclaw_runtime.runner.projection_memo import _CONVERTERS, _MEMOS, release_attempt_caches
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply
from openclaw_runtime.transcript import run_transcript_sanitizers
from openclaw_runtime.transcript.incremental import IncrementalSanitizer
from openclaw_runtime.transcript.sanitize import BUILTIN_SANITIZERS
from tests.run_support import mock_openai_config, mock_openai_server, read
from tests.test_transcript_incremental import POLICIES, History

pytestmark = pytest.mark.anyio


class CountingProject:
    """A pure projection (a function of the message) that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, message: Any) -> Any:
        self.calls += 1
        return ("projected", message.to_dict()["content"])


def _messages(count: int, tag: str) -> list[Any]:
    out: list[Any] = []
    for n in range(count):
        if n % 2:
            out.append(
                ToolResultMessage(
                    tool_call_id=f"{tag}{n}",
                    tool_name="read",
                    content=[TextContent(text=f"{tag}{n}")],
                )
            )
        else:
            out.append(UserMessage(content=f"{tag}{n}"))
    return out


# (messages in the previous request, of which kept, messages of the next request that are new)
SHAPES = [(0, 0, 0), (1, 1, 0), (1, 0, 1), (6, 3, 2), (6, 6, 3), (6, 0, 4), (20, 7, 5), (20, 20, 0)]


@pytest.mark.parametrize(("size", "kept", "new"), SHAPES)
@pytest.mark.parametrize("limit", [100, 4_000])
def test_keep_only_forgets_the_rest_and_changes_no_projection(
    size: int, kept: int, new: int, limit: int
) -> None:
    memo = ProjectionMemo()
    project = CountingProject()
    previous = _messages(size, "p")
    memo.project_all(previous, limit, project)
    keep = previous[:kept]
    memo.keep_only(keep, [])
    # of the previous request only its leading kept messages stay (here: all of ``keep``)
    if kept:
        assert memo._last is not None and memo._last[2] == limit
        assert len(memo._last[0]) == kept and all(map(operator.is_, memo._last[0], keep))
        assert memo._last[1] == [CountingProject()(m) for m in keep]
    else:
        assert memo._last is None
    assert sorted(memo._entries) == sorted({id(m) for m in keep})
    assert all(memo._entries[id(m)][0] is m for m in keep)
    # the next request: the kept messages, the forgotten ones (projected again), new ones
    following = [*keep, *previous[kept:], *_messages(new, "n")]
    project.calls = 0
    got = memo.project_all(following, limit, project)
    assert got == [CountingProject()(m) for m in following]  # as if nothing was memoized
    assert project.calls == len(following) - len(keep)  # the kept ones were reused


def test_keep_only_keeps_the_messages_of_every_list_given() -> None:
    memo = ProjectionMemo()
    history, outputs, kernel = _messages(4, "h"), _messages(3, "o"), _messages(5, "k")
    memo.project_all([*history, *outputs, *kernel], 100, CountingProject())
    memo.keep_only(history, outputs)
    assert set(memo._entries) == {id(m) for m in [*history, *outputs]}


@pytest.mark.parametrize("seed", range(24))
@pytest.mark.parametrize("policy_name", sorted(POLICIES))
def test_end_attempt_keeps_the_prefix_and_the_pipelines_output(seed: int, policy_name: str) -> None:
    policy = POLICIES[policy_name]
    history = History(seed)
    for _ in range(2 + seed % 3):
        history.turn()
    session = list(history.messages)  # the session's models before the attempt
    released, kept = IncrementalSanitizer(), IncrementalSanitizer()
    # attempt 1: the session's messages, then the kernel's own objects, request by request
    history.turn()
    attempt = history.messages
    for end in range(len(session) + 1, len(attempt) + 1):
        for cache in (released, kept):
            assert cache.run(attempt[:end], policy, BUILTIN_SANITIZERS) == (
                run_transcript_sanitizers(attempt[:end], policy, BUILTIN_SANITIZERS)
            )
    before = released.stable_prefix()
    released.end_attempt()
    assert released._loop is None
    after = released.stable_prefix()  # what the replay checkpoint records: unchanged
    assert (before is None) == (after is None)
    if before is not None and after is not None:
        assert before[0] == after[0] and all(map(lambda a, b: a is b, before[1], after[1]))
        assert len(before[1]) == len(after[1])
    assert list(released.cached_outputs) == list(kept.cached_outputs)
    # attempt 2 starts from the session's models: the attempt's messages are other objects now
    models = [*session, *(m.model_copy() for m in attempt[len(session) :])]
    history.messages = list(models)
    history.turn()
    for end in range(len(models) + 1, len(history.messages) + 1):
        request = history.messages[:end]
        expected = run_transcript_sanitizers(request, policy, BUILTIN_SANITIZERS)
        assert released.run(request, policy, BUILTIN_SANITIZERS) == expected
        assert kept.run(request, policy, BUILTIN_SANITIZERS) == expected


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with mock_openai_server() as running:
        yield running


async def _two_runs(
    tmp_path: Path, server: FaultInjectingOpenAIServer, *, memory: bool
) -> tuple[
    list[Any],
    list[Any],
    list[Any],
    IncrementalSanitizer,
    ProjectionMemo | None,
    PrefixConverter | None,
]:
    """Two tool-loop runs on one kept-open session; the second run's request bodies, both
    results' messages, and the session's caches after the second run."""
    runtime = Runtime(
        mock_openai_config(tmp_path / "state", server), load_entrypoints=False, memory=memory
    )
    results = []
    try:
        for run in range(2):
            for n in range(3):
                server.enqueue(Reply(tool_calls=[("read", {"path": f"r{run}f{n}.txt"})]))
            server.enqueue(Reply(text=f"answer {run}"))
            start = len(server.requests)
            results.append(await runtime.run(f"read them {run}", session_id="kept", tools=[read]))
        bodies = [r.body for r in server.requests[start:]]
        session = await runtime.checkout_session("kept", cwd=str(tmp_path))
        try:
            context = list(session.build_session_context().messages)
            sanitizer = session.replay_sanitizer
            memo = _MEMOS.get(session)
            converter = _CONVERTERS.get(session)
        finally:
            await runtime.checkin_session(session)
    finally:
        await runtime.aclose()
    assert all(result.ok for result in results)
    return bodies, [r.messages for r in results], context, sanitizer, memo, converter


@pytest.mark.parametrize("memory", [True, False], ids=["memory", "durable"])
async def test_a_kept_open_session_holds_none_of_the_runs_kernel_messages(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    memory: bool,
) -> None:
    bodies, messages, context, sanitizer, memo, converter = await _two_runs(
        tmp_path / "released", server, memory=memory
    )
    assert sanitizer._loop is None
    assert memo is not None
    # every projection kept is of a message the session still hands out (or the sanitizer's
    # cached output of it): none of the kernel's objects; the previous request is kept as
    # far as its leading run of such messages, with the projections the entries hold
    known = {id(m) for m in [*context, *sanitizer.cached_outputs]}
    assert memo._entries and set(memo._entries) <= known
    if memo._last is not None:
        inputs, outputs, _ = memo._last
        assert {id(m) for m in inputs} <= known
        assert all(memo._entries[id(m)][2] is p for m, p in zip(inputs, outputs, strict=True))
    # the token sum and the converter kept across attempts hold the same leading run of
    # projections, nothing of the kernel's
    kept = list(memo.kept_outputs())
    assert all(map(operator.is_, memo.tokens._messages or [], kept))
    assert len(memo.tokens._messages or []) == len(kept)
    assert converter is not None and converter._inputs == kept
    assert all(map(operator.is_, converter._inputs, kept))
    server.reset()
    # the same two runs with the caches kept as they were: the same requests and results
    monkeypatch.setattr(attempt_module, "release_attempt_caches", lambda session, history: None)
    kept_bodies, kept_messages, kept_context, kept_sanitizer, kept_memo, _ = await _two_runs(
        tmp_path / "kept", server, memory=memory
    )
    assert kept_sanitizer._loop is not None  # the check above would fail without the release
    assert kept_memo is not None and not set(kept_memo._entries) <= {
        id(m) for m in [*kept_context, *kept_sanitizer.cached_outputs]
    }
    assert bodies == kept_bodies and len(bodies) == 4
    for mine, theirs in zip(messages, kept_messages, strict=True):
        assert [_untimed(m) for m in mine] == [_untimed(m) for m in theirs]
    assert [_untimed(m) for m in context] == [_untimed(m) for m in kept_context]


def _untimed(message: Any) -> dict[str, Any]:
    wire = dict(message.to_dict())
    wire.pop("timestamp", None)
    return wire


def test_release_on_a_session_without_a_memo_makes_none() -> None:
    class Session:
        def __init__(self) -> None:
            self.replay_sanitizer = IncrementalSanitizer()

    session = Session()
    release_attempt_caches(session, [])
    assert session not in _MEMOS
    gc.collect()


# --------------------------------------------------------------------------- the attempt's layers


@pytest.mark.parametrize("skill", [False, True], ids=["no-skill-env", "skill-env"])
async def test_an_attempt_without_skill_variables_holds_no_scope_nor_wrapper(
    tmp_path: Path, server: FaultInjectingOpenAIServer, skill: bool
) -> None:
    """``run_attempt`` hands out the attempt's coroutine when no skill variable applies; with
    some, the scope applies them for the attempt only. What the attempt's tools see is the
    same either way: the enclosing scope, with the skill's variables on top."""
    from openclaw_runtime.prompt.skills.env import current_skill_env, skill_env_scope
    from tests.test_prompt_run import config, write_skill

    workspace = tmp_path / "ws"
    (workspace / "skills").mkdir(parents=True)
    if skill:
        write_skill(
            workspace / "skills", "deploy", "name: deploy\ndescription: d\nenv:\n  SKILL_TOKEN: t"
        )
    seen: dict[str, Any] = {}

    @tool(name="probe")
    async def probe() -> str:
        """Look at the attempt from inside it."""
        live = gc.get_objects()
        seen["env"] = dict(current_skill_env())
        seen["scopes"] = sum(type(o) is skill_env_scope for o in live)
        seen["wrappers"] = sum(
            type(o).__name__ == "coroutine"
            and o.cr_code.co_name in ("run_attempt", "_run_attempt_in_env")
            for o in live
        )
        seen["attempts"] = sum(
            type(o).__name__ == "coroutine" and o.cr_code.co_name == "_run_attempt" for o in live
        )
        return "done"

    runtime = Runtime(config(tmp_path, server, workspace=str(workspace)), load_entrypoints=False)
    server.enqueue(Reply(tool_calls=[("probe", {})]))
    server.enqueue(Reply(text="ok"))
    with skill_env_scope({"OUTER": "1"}):
        async with runtime:
            result = await runtime.run("deploy", tools=[probe])
        assert dict(current_skill_env()) == {"OUTER": "1"}  # restored
    assert result.ok, result.error
    assert seen["env"] == ({"OUTER": "1", "SKILL_TOKEN": "t"} if skill else {"OUTER": "1"})
    assert seen["attempts"] == 1
    # the test's own outer scope, and the attempt's when a skill has variables
    assert (seen["scopes"], seen["wrappers"]) == ((2, 1) if skill else (1, 0))


def test_release_on_a_session_that_cannot_be_weakly_keyed() -> None:
    class Odd:
        __hash__ = None  # type: ignore[assignment]

        def __init__(self) -> None:
            self.replay_sanitizer = IncrementalSanitizer()

    release_attempt_caches(Odd(), [])  # no memo was ever kept for it: nothing to do, no error
