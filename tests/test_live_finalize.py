"""A message that waits when the run would end wins over ``before_agent_finalize`` (issue 15
§1/§6, OpenClaw: a queued user message wins over finalization): the table of
``finalize_step``, and end to end over real HTTP (asyncio and trio) a steer or follow-up from
another runtime on the same state dir that lands after the kernel's last drain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime._markers import hookimpl
from openclaw_runtime.runner.finalize import MAX_BEFORE_AGENT_FINALIZE_REVISIONS, finalize_step
from openclaw_runtime.runner.finalize_steer import STEERED_BEFORE_FINALIZE
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer
from tests.test_live_runs import user_texts
from tests.test_run_recovery import KEYS, build_runtime

pytestmark = pytest.mark.anyio
STEER = "also check the CI config"
LIMIT = MAX_BEFORE_AGENT_FINALIZE_REVISIONS


@pytest.mark.parametrize(
    ("queued", "revisions", "payloads", "step"),
    [
        (True, 0, 1, "steer"),
        (True, LIMIT, 1, "steer"),  # a spent revision budget does not drop the steer
        (True, 0, 0, "steer"),  # nor does an empty answer
        (False, 0, 1, "consult"),
        (False, LIMIT - 1, 2, "consult"),
        (False, LIMIT, 1, "accept"),
        (False, 0, 0, "accept"),
    ],
)
def test_finalize_step(queued: bool, revisions: int, payloads: int, step: str) -> None:
    assert (
        finalize_step(message_queued=queued, revisions_so_far=revisions, payload_count=payloads)
        == step
    )


class Verifier:
    """Records what ``before_agent_finalize`` is asked about; always accepts."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    @hookimpl
    def before_agent_finalize(self, last_assistant_message: str, revision: int) -> None:
        self.seen.append(last_assistant_message)


@pytest.fixture
def server() -> Any:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as running:
        yield running


@pytest.mark.parametrize("verb", ["steer", "follow_up"])
async def test_a_message_waiting_at_the_end_wins_over_finalization(
    tmp_path: Path, server: FaultInjectingOpenAIServer, verb: str
) -> None:
    verifier = Verifier()
    runtime = build_runtime(tmp_path, server, plugins=(verifier,))
    other = build_runtime(tmp_path, server)  # another runtime (process) on the same state dir
    answers: list[Any] = []
    events: list[Any] = []

    async def on_event(event: Any) -> None:
        events.append(event)
        # the kernel made its last drain: a message now waits in the run's inbox
        if event.type == "agent_end" and not answers:
            send = other.steer if verb == "steer" else other.follow_up
            answers.append(await send(STEER, session_key="chat:fin"))

    try:
        with anyio.fail_after(60):  # only turns a hang into a failure
            result = await runtime.run("write a poem", session_key="chat:fin", on_event=on_event)
    finally:
        await runtime.aclose()
        await other.aclose()
    assert [(a.accepted, a.reason) for a in answers] == [(True, "queued_remote")]
    assert result.ok, result.error
    # the run went on with the steer; the hook was asked only about the answer to it
    assert [user_texts(r) for r in server.requests] == [
        ["write a poem"],
        ["write a poem", STEER],
    ]
    assert verifier.seen == [result.text] and result.text.endswith(f"You said: {STEER}")
    ends = [
        e.message.text() for e in events if e.type == "message_end" and e.message.role == "user"
    ]
    assert ends == ["write a poem", STEER]  # observers see the steer as an injected message
    scheduled = [(e.kind, e.count) for e in events if e.type == "retry_scheduled"]
    assert scheduled == [(STEERED_BEFORE_FINALIZE, 1)]
    roles = [(m.role, m.text()) for m in result.messages if m.role in ("user", "assistant")]
    assert [r for r, _ in roles] == ["user", "assistant", "user", "assistant"]
    assert roles[2] == ("user", STEER)
