"""Two failover rules end to end over real HTTP (issue 15 §3):

* ``model_not_found`` goes straight to the next model: no other auth profile of the same
  provider can make an unknown model known, so none is tried (and none is blamed);
* an aborted run is not a success: no ``fallback_succeeded``, and no other model is tried.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.abort import AbortController
from openclaw_runtime.events import Event
from openclaw_runtime.testing.openai_server import Fault, FaultInjectingOpenAIServer

pytestmark = pytest.mark.anyio

KEYS = {"key-a": "ok", "key-b": "ok", "key-backup": "ok"}


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as running:
        yield running


def _model(server: FaultInjectingOpenAIServer, model_id: str, provider: str) -> dict[str, Any]:
    return {
        "id": model_id,
        "api": "openai-completions",
        "provider": provider,
        "baseUrl": server.base_url,
        "contextWindow": 64_000,
        "maxTokens": 1024,
    }


@pytest.fixture
async def runtime_for(tmp_path: Path) -> Any:
    made: list[Runtime] = []

    def build(
        server: FaultInjectingOpenAIServer, primary: str, fallbacks: tuple[str, ...]
    ) -> Runtime:
        profiles = [
            {"id": "mock:0", "provider": "mock", "mode": "api_key", "credential": {"value": k}}
            for k in ("key-a",)
        ] + [
            {
                "id": "mock:1",
                "provider": "mock",
                "mode": "api_key",
                "credential": {"value": "key-b"},
            },
            {
                "id": "backup:0",
                "provider": "backup",
                "mode": "api_key",
                "credential": {"value": "key-backup"},
            },
        ]
        config = {
            "state_dir": str(tmp_path / "state"),
            "models": [
                _model(server, "main", "mock"),
                _model(server, "ghost", "mock"),  # configured, but the server does not know it
                _model(server, "mini", "backup"),
            ],
            "agent": {"model": primary, "fallbacks": list(fallbacks), "timeout_seconds": 20},
            "auth": {"profiles": profiles},
        }
        runtime = Runtime(config, load_entrypoints=False)
        runtime.retry_backoff_scale = 0
        made.append(runtime)
        return runtime

    yield build
    for runtime in made:
        await runtime.aclose()


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        if event.type != "message_update":
            self.events.append(event)

    def of(self, kind: str) -> list[Any]:
        return [event for event in self.events if event.type == kind]

    def types(self) -> list[str]:
        return [event.type for event in self.events]


async def ledger(runtime: Runtime) -> dict[str, dict[str, Any]]:
    state = await runtime.auth_store.load()
    return {pid: stats.to_dict() for pid, stats in state.usage_stats.items()}


async def test_model_not_found_goes_straight_to_the_next_model(
    server: FaultInjectingOpenAIServer, runtime_for: Any
) -> None:
    runtime = runtime_for(server, "mock/ghost", ("backup/mini",))
    recorder = Recorder()
    result = await runtime.run("hello", on_event=recorder)
    assert result.ok, result.error
    assert (result.provider, result.model, result.auth_profile_id) == ("backup", "mini", "backup:0")
    # one request for the unknown model, with the first key only; then the fallback model
    assert [(r.body["model"], r.outcome) for r in server.requests] == [
        ("ghost", "unknown_model"),
        ("mini", "ok"),
    ]
    assert recorder.of("profile_rotated") == []
    (decision,) = recorder.of("fallback_decision")
    assert (decision.model, decision.action, decision.reason) == (
        "ghost",
        "fallback_model",
        "model_not_found",
    )
    # the second key was never tried, so it carries no failure
    assert "mock:1" not in await ledger(runtime) or not (await ledger(runtime))["mock:1"].get(
        "errorCount"
    )


async def test_model_not_found_without_a_fallback_surfaces_at_once(
    server: FaultInjectingOpenAIServer, runtime_for: Any
) -> None:
    runtime = runtime_for(server, "mock/ghost", ())
    recorder = Recorder()
    result = await runtime.run("hello", on_event=recorder)
    assert not result.ok and result.error is not None
    assert [r.body["model"] for r in server.requests] == ["ghost"]
    assert recorder.of("profile_rotated") == []


async def test_other_failures_still_rotate_before_falling_back(
    server: FaultInjectingOpenAIServer, runtime_for: Any
) -> None:
    """The control: a rate-limited key still rotates to the next profile of the model."""
    server.set_key("key-a", "rate_limited")
    runtime = runtime_for(server, "mock/main", ("backup/mini",))
    recorder = Recorder()
    result = await runtime.run("hello", on_event=recorder)
    assert result.ok and result.auth_profile_id == "mock:1"
    assert [r.reason for r in recorder.of("profile_rotated")] == ["rate_limit"]


async def test_an_aborted_run_emits_no_fallback_succeeded(
    server: FaultInjectingOpenAIServer, runtime_for: Any
) -> None:
    server.inject(Fault(kind="hang", model="main", times=1))
    runtime = runtime_for(server, "mock/main", ("backup/mini",))
    controller = AbortController()
    recorder = Recorder()

    def on_event(event: Event) -> None:
        recorder(event)
        # the hanging response has started streaming: abort the run from outside
        if event.type == "message_start" and getattr(event.message, "role", "") == "assistant":
            controller.abort()

    with anyio.fail_after(15):
        result = await runtime.run("hi", abort_signal=controller.signal, on_event=on_event)
    assert not result.ok and result.outcome.reason == "aborted"
    assert recorder.of("fallback_succeeded") == []
    assert recorder.of("fallback_decision") == []
    # one candidate started, and the fallback model was never called
    assert [(e.model, e.attempt) for e in recorder.of("fallback_attempt_start")] == [("main", 1)]
    assert [r.body["model"] for r in server.requests] == ["main"]


async def test_a_completed_run_still_emits_fallback_succeeded(
    server: FaultInjectingOpenAIServer, runtime_for: Any
) -> None:
    runtime = runtime_for(server, "mock/main", ("backup/mini",))
    recorder = Recorder()
    result = await runtime.run("hi", on_event=recorder)
    assert result.ok
    (succeeded,) = recorder.of("fallback_succeeded")
    assert (succeeded.model, succeeded.attempt, succeeded.previous_failures) == ("main", 1, 0)
