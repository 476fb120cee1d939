"""Provider quirks end to end through ``Runtime.run`` over real HTTP (issue 9 §3), on asyncio
and trio: llama.cpp's empty stream for an oversized prompt, the output cap on every call, a
prompt refused before it is sent, a 200 that is not an event stream, and an unreachable
provider reported as ``network``."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.context import (
    format_prompt_too_large_message,
    should_refuse_prompt_before_sending,
)
from openclaw_runtime.context.preemptive import PROMPT_REFUSAL_WINDOW_FACTOR
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.providers.empty_stream import DIAGNOSTIC_NOTE
from openclaw_runtime.runner.entry import resolve_output_token_cap
from openclaw_runtime.runner.error_kind import provider_error_kind, user_facing_reason
from openclaw_runtime.runner.request import RunRequest
from openclaw_runtime.testing import ScriptedReply
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer
from tests.test_run_recovery import (
    KEYS,
    Recorder,
    assert_lifecycle,
    branch_messages,
    build_runtime,
    file_entries,
    seed_history,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
async def make_runtime(tmp_path: Path) -> Any:
    made: list[Runtime] = []

    def factory(server: FaultInjectingOpenAIServer, **options: Any) -> Runtime:
        runtime = build_runtime(tmp_path, server, **options)
        made.append(runtime)
        return runtime

    yield factory
    for runtime in made:
        await runtime.aclose()


# --------------------------------------------------------------------------- llama.cpp


@pytest.mark.parametrize("style", ["llamacpp", "llamacpp_cut"])
async def test_llamacpp_empty_stream_overflow_is_learned_compacted_and_answered(
    make_runtime: Any, style: str
) -> None:
    # the catalog says 64k; the llama.cpp-like server really holds 3 000 tokens and answers the
    # oversized streamed prompt with an empty 200 (or a cut after the headers). One
    # non-streaming max_tokens=1 request learns why; the run learns the limit, compacts, answers
    with FaultInjectingOpenAIServer(
        models={"main": 3_000, "mini": 64_000}, keys=KEYS, overflow_style=style
    ) as server:
        runtime = make_runtime(server)
        await seed_history(runtime, "s-llama", turns=6, size=1_200)
        recorder = Recorder()
        result = await runtime.run("and now?", session_id="s-llama", on_event=recorder)
        assert result.ok, result.error
        assert result.text.startswith("You said: and now?")
        assert recorder.decisions()[:3] == ["adjust_window", "compact", "done"]
        assert runtime.learned_context_windows["mock/main"] == 3_000
        first, diagnostic = server.requests[0], server.requests[1]
        assert (first.stream, first.outcome, first.status) == (True, "overflow", 200)
        assert (diagnostic.stream, diagnostic.outcome, diagnostic.status) == (
            False,
            "overflow",
            400,
        )
        assert diagnostic.body["max_tokens"] == 1
        assert diagnostic.body["messages"] == first.body["messages"]
        # exactly one diagnostic per empty stream, and no silent "empty response" retries
        assert sum(1 for r in server.requests if not r.stream) == 1
        (failed,) = [e for e in recorder.of("attempt_end") if e.error]
        assert "maximum context length is 3000 tokens" in failed.error
        assert failed.error.endswith(DIAGNOSTIC_NOTE)
        assert failed.failover_reason == "context_overflow"
        assert "summary" in [r.outcome for r in server.requests]
        assert result.compactions == 1
        assert_lifecycle(recorder)


async def test_an_empty_stream_for_a_small_prompt_makes_no_diagnostic(
    tmp_path: Path, local_http_server: Any
) -> None:
    # a two-word prompt against a known window overflowed nothing: an empty 200 stays an
    # ordinary empty response, re-sent as before, and no non-streaming request is made
    for _ in range(6):
        local_http_server.enqueue(ScriptedReply(body=[]))
    config = {
        "state_dir": str(tmp_path / "state"),
        "models": [
            {
                "id": "m",
                "api": "openai-completions",
                "provider": "local",
                "baseUrl": local_http_server.base_url + "/v1",
                "contextWindow": 64_000,
            }
        ],
        "agent": {"model": "local/m"},
    }
    async with Runtime(config, load_entrypoints=False) as runtime:
        runtime.retry_backoff_scale = 0
        result = await runtime.run("hi there", session_id="s-small")
    assert not result.ok
    bodies = [r.json() for r in local_http_server.requests]
    assert len(bodies) > 1  # retried like any empty response
    assert all(body["stream"] is True for body in bodies)
    assert result.error is not None
    assert "empty response" in result.error.message


# --------------------------------------------------------------------------- output cap


@pytest.mark.parametrize(
    ("requested", "configured", "model_max", "expected"),
    [
        (100, 5_000, 8_192, 100),
        (None, 5_000, 8_192, 5_000),
        (None, None, 8_192, 8_192),
        (None, None, None, None),
        (0, None, 1_024, 1_024),  # non-positive counts as unset
        (True, None, 1_024, 1_024),  # a bool is not a count
    ],
)
def test_resolve_output_token_cap(requested, configured, model_max, expected):
    assert resolve_output_token_cap(requested, configured, model_max) == expected


async def test_every_model_call_carries_the_output_cap(tmp_path: Path, make_runtime: Any) -> None:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as server:
        default = make_runtime(server)  # the model's maxTokens (1024)
        assert (await default.run("one", session_id="s-cap")).ok
        assert server.requests[-1].body["max_tokens"] == 1_024
        configured = make_runtime(server, agent={"max_tokens": 300})
        assert (await configured.run("two", session_id="s-cap2")).ok
        assert server.requests[-1].body["max_tokens"] == 300
        assert (await configured.run("three", session_id="s-cap3", max_tokens=77)).ok
        assert server.requests[-1].body["max_tokens"] == 77
        # the provider still never asks for more than the catalog's cap
        assert (await configured.run("four", session_id="s-cap4", max_tokens=50_000)).ok
        assert server.requests[-1].body["max_tokens"] == 1_024


@pytest.mark.parametrize("value", [0, -5, 2.5, "100", True])
def test_run_request_rejects_a_bad_max_tokens(value: Any) -> None:
    with pytest.raises(ValueError, match=r"RunRequest\.max_tokens must be a positive integer"):
        RunRequest(prompt="hi", max_tokens=value)


# --------------------------------------------------------------------------- refused prompt


@pytest.mark.parametrize(
    ("tokens", "window", "refused"),
    [
        (10, 128_000, False),
        (128_000, 128_000, False),  # at the window: compaction/overflow recovery may still help
        (int(128_000 * PROMPT_REFUSAL_WINDOW_FACTOR), 128_000, False),
        (int(128_000 * PROMPT_REFUSAL_WINDOW_FACTOR) + 1, 128_000, True),
        (1_300_000, 128_000, True),  # a 5 MB prompt
        (1_300_000, None, False),  # unknown window: nothing to compare with
        (1_300_000, 0, False),
    ],
)
def test_should_refuse_prompt_before_sending(tokens, window, refused):
    assert should_refuse_prompt_before_sending(tokens, window) is refused


def test_format_prompt_too_large_message():
    assert format_prompt_too_large_message(
        prompt_tokens=1_572_870, prompt_chars=5_242_880, context_window=64_000, model_ref="a/b"
    ) == (
        "prompt too large: about 1,572,870 tokens estimated (5,242,880 characters) for the "
        "64,000-token context window of a/b; it was not sent (the prompt is kept in the "
        "session transcript)"
    )


async def test_a_prompt_far_above_the_window_is_refused_before_it_is_sent(
    make_runtime: Any,
) -> None:
    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as server:
        runtime = make_runtime(server)
        assert (await runtime.run("first", session_id="s-big")).ok
        sent_before = len(server.requests)
        prompt = "lorem ipsum " * 450_000  # 5.4 MB
        recorder = Recorder()
        result = await runtime.run(prompt, session_id="s-big", on_event=recorder)
        assert not result.ok
        assert result.error is not None and result.error.kind == "prompt_too_large"
        assert "tokens estimated (5,400,000 characters)" in result.error.message
        assert "64,000-token context window of mock/main" in result.error.message
        assert len(server.requests) == sent_before  # nothing was sent
        assert result.attempts == 1 and "compaction_start" not in recorder.types()
        (ended,) = recorder.of("attempt_end")
        assert ended.error == result.error.message  # the timeline says why, too
        # the prompt is kept in the transcript file, set aside from the active branch
        entries = file_entries(result.session_file or "")
        kept = [e for e in entries if e.get("message", {}).get("content") == prompt]
        assert len(kept) == 1
        branch = await branch_messages(runtime, "s-big")
        assert [m.role for m in branch] == ["user", "assistant"]  # the first turn only
        assert_lifecycle(recorder)
        # the session goes on as if the refused prompt had not been replayed
        after = await runtime.run("still there?", session_id="s-big")
        assert after.ok
        assert all(prompt not in str(m) for m in server.requests[-1].body["messages"])


# --------------------------------------------------------------------------- error kinds


@pytest.mark.parametrize(
    ("text", "timed_out", "kind"),
    [
        (
            "Connection error: cannot reach http://h/v1/chat/completions (connection refused)",
            False,
            "network",
        ),
        (
            "Connection error: cannot resolve host 'h' for http://h/v1 (no such host)",
            False,
            "network",
        ),
        ("Connection error: timed out connecting to http://h/v1 (timed out)", False, "provider"),
        ("LLM request timed out after 1s (attempt timeout)", True, "timeout"),
        ("500 internal error", False, "provider"),
    ],
)
def test_provider_error_kind(text, timed_out, kind):
    assert provider_error_kind(text, timed_out=timed_out) == kind


def test_user_facing_reason_hides_the_timeout_filing_of_network_errors():
    assert user_facing_reason("network", "timeout") is None
    assert user_facing_reason("provider", "timeout") == "timeout"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    "base_url",
    ["http://127.0.0.1:{port}/v1", "http://openclaw-quirks-run.invalid/v1"],
    ids=["refused", "dns"],
)
async def test_an_unreachable_provider_is_a_network_error_naming_the_url(
    tmp_path: Path, base_url: str
) -> None:
    url = base_url.format(port=closed_port())
    config = {
        "state_dir": str(tmp_path / "state"),
        "models": [
            {"id": "m", "api": "openai-completions", "provider": "far", "baseUrl": url},
        ],
        "agent": {"model": "far/m"},
        "auth": {
            "profiles": [
                {"id": "far:0", "provider": "far", "mode": "api_key", "credential": {"value": "k"}}
            ]
        },
    }
    async with Runtime(config, load_entrypoints=False) as runtime:
        runtime.retry_backoff_scale = 0
        result = await runtime.run("hi", session_id="s-net")
    assert not result.ok
    assert result.error is not None
    assert result.error.kind == "network"
    assert result.error.reason is None
    assert f"{url}/chat/completions" in result.error.message
    assert "timed out" not in result.error.message and "timeout" not in result.error.message


async def test_a_200_html_page_is_one_error_not_four_empty_retries(
    tmp_path: Path, local_http_server: Any
) -> None:
    page = b"<html><head><title>Example Domain</title></head><body>nope</body></html>"
    for _ in range(6):
        local_http_server.enqueue(ScriptedReply(200, {"content-type": "text/html"}, [page]))
    config = {
        "state_dir": str(tmp_path / "state"),
        "models": [
            {
                "id": "m",
                "api": "openai-completions",
                "provider": "local",
                "baseUrl": local_http_server.base_url + "/v1",
            }
        ],
        "agent": {"model": "local/m"},
    }
    async with Runtime(config, load_entrypoints=False) as runtime:
        runtime.retry_backoff_scale = 0
        recorder = Recorder()
        result = await runtime.run("hi", session_id="s-html", on_event=recorder)
    assert not result.ok
    assert len(local_http_server.requests) == 1  # not re-sent as an "empty response"
    assert result.error is not None and result.error.reason == "server_error"
    assert (
        f"got text/html from {local_http_server.base_url}/v1/chat/completions: Example Domain"
    ) in result.error.message
    assert "retry_scheduled" not in recorder.types()


async def test_the_refused_prompt_keeps_the_users_images_too(make_runtime: Any) -> None:
    from openclaw_runtime.messages import ImageContent

    with FaultInjectingOpenAIServer(models={"main": 64_000, "mini": 64_000}, keys=KEYS) as server:
        runtime = make_runtime(server)
        image = ImageContent(data="aGk=", mime_type="image/png")
        result = await runtime.run("z" * 500_000, session_id="s-img", images=[image])
        assert result.error is not None and result.error.kind == "prompt_too_large"
        assert server.requests == []
        kept = [e for e in file_entries(result.session_file or "") if e.get("type") == "message"]
        message = UserMessage.model_validate(kept[0]["message"])
        assert isinstance(message.content, list) and message.content[1].data == "aGk="


def test_unknown_overflow_style_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown overflow_style 'nope'"):
        FaultInjectingOpenAIServer(overflow_style="nope")
