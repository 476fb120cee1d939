"""The fault-injecting OpenAI server, over real HTTP, through our own provider."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time

import anyio
import httpx
import orjson
import pytest

from openclaw_runtime.context.compaction import SUMMARY_SYSTEM_PROMPT, build_summary_prompt
from openclaw_runtime.failover import (
    classify_failover_signal,
    is_context_overflow_error,
    signal_from_assistant_message,
)
from openclaw_runtime.failover.http_status import failover_reason_from_classification
from openclaw_runtime.llm import Context, Model, StreamOptions, Tool
from openclaw_runtime.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.providers.openai_compat import OpenAICompatProvider
from openclaw_runtime.testing import (
    Fault,
    FaultInjectingOpenAIServer,
    KeyBehavior,
    Reply,
    ServedRequest,
)
from openclaw_runtime.testing.openai_server import api_key_fingerprint, estimate_prompt_tokens

WEATHER = Tool(
    "get_weather",
    "Current weather for a city.",
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city", "days"],
    },
)
LOOKUP = Tool(
    "lookup",
    "Look things up.",
    {
        "type": "object",
        "properties": {"q": {"type": "string"}, "exact": {"type": "boolean"}},
        "required": ["q", "exact"],
    },
)
GOOD_KEY = "sk-good-key-0123456789"


def model_for(server, model_id="gpt-test"):
    return Model(id=model_id, api="openai-completions", provider="openai", baseUrl=server.base_url)


def ask(text="hi", tools=(), system="be brief"):
    return Context(system, [UserMessage(content=text)], list(tools))


def reason_of(message):
    return failover_reason_from_classification(
        classify_failover_signal(signal_from_assistant_message(message))
    )


_CLIENT: list[httpx.Client] = []


@pytest.fixture(scope="module", autouse=True)
def _http_client():
    # one client for the module: building one per request costs ~30 ms (its SSL context)
    with httpx.Client(timeout=5) as client:
        _CLIENT.append(client)
        yield
        _CLIENT.clear()


def post(server, body, key=None):
    headers = {"authorization": f"Bearer {key}"} if key else {}
    raw = body if isinstance(body, bytes) else orjson.dumps(body)
    return _CLIENT[0].post(server.base_url + "/chat/completions", content=raw, headers=headers)


def get(server, path):
    return _CLIENT[0].get(server.base_url + path)


def sse_chunks(response):
    lines = [line[6:] for line in response.text.split("\n\n") if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [orjson.loads(line) for line in lines[:-1]]


@pytest.fixture
async def provider():
    instance = OpenAICompatProvider(env={})  # no OPENAI_API_KEY from the environment
    yield instance
    await instance.aclose()


async def run(provider, model, context=None, **options):
    stream = provider.stream_fn(model, context or ask(), StreamOptions(**options))
    with anyio.fail_after(10):
        events = [event async for event in stream]
        return events, await stream.result()


# --------------------------------------------------------------------------- the brain


@pytest.mark.anyio
async def test_brain_answer_streams_in_several_deltas_with_usage(provider, openai_server):
    prompt = "Please repeat this sentence back to me, word for word, if you can."
    events, message = await run(provider, model_for(openai_server), ask(prompt))
    assert message.stop_reason == "stop"
    assert message.text() == f"You said: {prompt}"
    deltas = [e for e in events if e.type == "text_delta"]
    assert len(deltas) == -(-len(message.text()) // 16) >= 3
    assert message.response_id.startswith("chatcmpl-")
    served = openai_server.requests[0]
    assert (served.outcome, served.status, served.stream) == ("ok", 200, True)
    assert served.message_count == 2
    assert message.usage.input == served.estimated_tokens > 0
    assert message.usage.output > 0


@pytest.mark.anyio
async def test_tool_call_round_trip(provider, openai_server):
    model = model_for(openai_server)
    context = ask("What's the weather in Lisbon? Use GET_WEATHER please.", [LOOKUP, WEATHER])
    events, call_message = await run(provider, model, context)
    assert call_message.stop_reason == "toolUse"
    (call,) = [b for b in call_message.content if isinstance(b, ToolCall)]
    assert (call.id, call.name, call.arguments) == (
        "call_1",
        "get_weather",
        {"city": "Lisbon", "days": 1},
    )
    assert sum(e.type == "toolcall_delta" for e in events) >= 2  # arguments arrive in pieces
    assert openai_server.requests[-1].outcome == "tool_call"
    assert openai_server.requests[-1].tools == ("lookup", "get_weather")

    result = ToolResultMessage(
        tool_call_id=call.id,
        tool_name=call.name,
        content=[TextContent(text='{"city": "Lisbon", "temp_c": 21}')],
    )
    context.messages += [call_message, result]
    _, answer = await run(provider, model, context)
    assert answer.stop_reason == "stop"
    assert answer.text() == 'The get_weather tool returned: {"city": "Lisbon", "temp_c": 21}'
    assert openai_server.requests[-1].outcome == "ok"


def test_tool_arguments_override_and_schema_defaults():
    tools = [
        {"type": "function", "function": {"name": "lookup", "parameters": LOOKUP.parameters}},
        {"type": "function", "function": {"name": "fixed", "parameters": {}}},
    ]
    with FaultInjectingOpenAIServer(tool_arguments={"fixed": {"n": 7}}) as server:
        body = {"model": "m", "tools": tools, "stream": False}
        first = post(server, {**body, "messages": [{"role": "user", "content": "lookup Oslo"}]})
        second = post(server, {**body, "messages": [{"role": "user", "content": "run FIXED"}]})
        plain = post(server, {**body, "messages": [{"role": "user", "content": "lookups?"}]})
    (call,) = first.json()["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "lookup", "arguments": '{"q":"Oslo","exact":true}'}
    (call,) = second.json()["choices"][0]["message"]["tool_calls"]
    assert (call["id"], call["function"]["arguments"]) == ("call_2", '{"n":7}')
    # "lookups" is not the word "lookup": no tool call
    assert plain.json()["choices"][0]["message"] == {
        "role": "assistant",
        "content": "You said: lookups?",
    }


@pytest.mark.anyio
async def test_summary_requests_get_a_summary(provider, openai_server):
    history = [
        UserMessage(content="Fix the flaky upload test"),
        AssistantMessage(content=[TextContent(text="Looking at it.")], stop_reason="stop"),
    ]
    context = Context(SUMMARY_SYSTEM_PROMPT, [UserMessage(content=build_summary_prompt(history))])
    _, message = await run(provider, model_for(openai_server), context)
    summary = message.text()
    assert summary.startswith("Goal: Fix the flaky upload test\n")
    assert (
        "Progress: summarized 2 earlier messages (1 from the user, 1 from the assistant" in summary
    )
    assert "Next steps:" in summary
    assert openai_server.requests[0].outcome == "summary"


def test_sse_wire_format_follows_openai():
    with FaultInjectingOpenAIServer(chunk_chars=4) as server:
        server.enqueue(
            Reply(text="Hello!", reasoning="hmm, ok", tool_calls=[("lookup", {"q": "x"})])
        )
        response = post(
            server,
            {
                "model": "m",
                "stream": True,
                "stream_options": {"include_usage": True},
                "messages": [{"role": "user", "content": "hi"}],
            },
        )
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["transfer-encoding"] == "chunked"
    chunks = sse_chunks(response)
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    assert len({c["id"] for c in chunks}) == 1
    deltas = [c["choices"][0]["delta"] for c in chunks[:-2]]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert "".join(d.get("reasoning_content", "") for d in deltas) == "hmm, ok"
    assert [d["content"] for d in deltas if d.get("content")] == ["Hell", "o!"]
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert calls[0] == {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": ""},
    }
    pieces = [c["function"]["arguments"] for c in calls[1:]]
    assert len(pieces) >= 2 and "".join(pieces) == '{"q":"x"}'
    assert chunks[-2]["choices"][0] == {
        "index": 0,
        "delta": {},
        "logprobs": None,
        "finish_reason": "tool_calls",
    }
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["total_tokens"] == sum(
        chunks[-1]["usage"][k] for k in ("prompt_tokens", "completion_tokens")
    )


def test_non_streaming_completion_models_and_bad_requests():
    with FaultInjectingOpenAIServer(models={"gpt-a": 1000, "gpt-b": 2000}) as server:
        messages = [{"role": "user", "content": "ping"}]
        whole = post(server, {"model": "gpt-a", "messages": messages}).json()
        listed = get(server, "/models").json()
        malformed = post(server, b"{not json")
        no_messages = post(server, {"model": "gpt-a"})
        wrong_path = _CLIENT[0].post(server.base_url + "/completions", json={})
        outcomes = [r.outcome for r in server.requests]
    assert whole["object"] == "chat.completion"
    assert whole["choices"][0]["message"] == {"role": "assistant", "content": "You said: ping"}
    assert whole["choices"][0]["finish_reason"] == "stop"
    assert whole["usage"]["prompt_tokens"] == estimate_prompt_tokens(messages)
    assert [(m["id"], m["object"]) for m in listed["data"]] == [
        ("gpt-a", "model"),
        ("gpt-b", "model"),
    ]
    assert malformed.status_code == 400
    assert malformed.json()["error"]["type"] == "invalid_request_error"
    assert no_messages.status_code == 400
    assert no_messages.json()["error"]["param"] == "messages"
    assert wrong_path.status_code == 404
    assert outcomes == ["ok", "models", "bad_request", "bad_request", "not_found"]


# --------------------------------------------------------------------------- faults


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("fault", "status", "code", "reason"),
    [
        (Fault("rate_limit", retry_after_s=2), 429, "rate_limit_exceeded", "rate_limit"),
        (Fault("overloaded"), 503, "overloaded", "overloaded"),
        (Fault("overloaded", status=529), 529, "overloaded", "overloaded"),
        (Fault("server_error"), 500, None, "server_error"),
        (Fault("context_overflow"), 400, "context_length_exceeded", "context_overflow"),
        (
            Fault(
                "status",
                status=402,
                body={"error": {"message": "Payment required", "code": "billing_hard_limit"}},
            ),
            402,
            "billing_hard_limit",
            "billing",
        ),
        (
            Fault("status", status=502, body="<html><h1>502 Bad Gateway</h1></html>"),
            502,
            None,
            "server_error",
        ),
    ],
    ids=[
        "rate_limit",
        "overloaded",
        "overloaded-529",
        "server_error",
        "context_overflow",
        "status-json",
        "status-html",
    ],
)
async def test_error_faults_are_classified(provider, openai_server, fault, status, code, reason):
    openai_server.inject(fault)
    _, message = await run(provider, model_for(openai_server))
    assert message.stop_reason == "error"
    assert (message.error_status, message.error_code) == (status, code)
    assert reason_of(message) == reason
    assert openai_server.requests[0].outcome == fault.kind
    assert openai_server.requests[0].status == status
    if fault.kind == "rate_limit":
        assert message.error_retry_after_ms == 2000
    if fault.kind == "context_overflow":
        assert is_context_overflow_error(message.error_message)
    # the fault was used up: the next request is answered
    _, message = await run(provider, model_for(openai_server))
    assert message.stop_reason == "stop"


@pytest.mark.anyio
async def test_empty_reasoning_only_and_delay(provider, openai_server):
    model = model_for(openai_server)
    openai_server.inject(Fault("empty"), Fault("reasoning_only"), Fault("delay", seconds=0.2))
    _, empty = await run(provider, model)
    assert (empty.stop_reason, empty.content) == ("stop", [])
    _, reasoning = await run(provider, model, ask("ponder"))
    assert reasoning.stop_reason == "stop"
    assert [type(b) for b in reasoning.content] == [ThinkingContent]
    assert reasoning.content[0].thinking == "Thinking about the request: ponder"
    started = time.monotonic()
    _, delayed = await run(provider, model)
    assert time.monotonic() - started >= 0.2
    assert delayed.text() == "You said: hi"
    assert [(r.outcome, r.fault) for r in openai_server.requests] == [
        ("empty", "empty"),
        ("reasoning_only", "reasoning_only"),
        ("ok", "delay"),
    ]


@pytest.mark.anyio
async def test_cut_stream_fails_with_output_started(provider, openai_server):
    openai_server.inject(Fault("cut_stream", after_chunks=3))
    prompt = "a prompt long enough to need several deltas"
    _, message = await run(provider, model_for(openai_server), ask(prompt))
    assert message.stop_reason == "error"
    assert message.error_message.startswith("stream disconnected before completion")
    assert message.error_output_started is True
    assert message.text() == f"You said: {prompt}"[:32]  # two 16-char deltas after the role
    assert openai_server.requests[0].outcome == "cut_stream"


@pytest.mark.anyio
async def test_hang_after_headers_meets_the_idle_timeout(provider, openai_server):
    openai_server.inject(Fault("hang"))
    started = time.monotonic()
    _, message = await run(provider, model_for(openai_server), idle_timeout=0.3)
    assert time.monotonic() - started < 2
    assert message.error_message == "Stream idle timeout: no data received for 0.3s (timed out)"
    assert reason_of(message) == "timeout"
    assert await anyio.to_thread.run_sync(openai_server.wait_for_disconnects, 1)
    (served,) = openai_server.requests
    assert (served.outcome, served.fault, served.disconnected) == ("hang", "hang", True)
    assert openai_server.disconnects == 1


@pytest.mark.anyio
async def test_hang_before_headers_meets_the_read_timeout(provider, openai_server):
    openai_server.inject(Fault("hang", before_headers=True))
    started = time.monotonic()
    _, message = await run(provider, model_for(openai_server), read_timeout=0.3)
    assert time.monotonic() - started < 2
    assert message.error_message.startswith("Request timed out")
    assert await anyio.to_thread.run_sync(openai_server.wait_for_disconnects, 1)


def test_times_and_matchers():
    with FaultInjectingOpenAIServer() as server:
        server.inject(
            Fault("server_error", model="gpt-a", times=2),
            Fault("rate_limit", api_key="sk-second-key-000"),
        )
        statuses = [
            post(
                server, {"model": model, "messages": [{"role": "user", "content": "x"}]}, key
            ).status_code
            for model, key in [
                ("gpt-b", GOOD_KEY),  # neither fault matches
                ("gpt-a", GOOD_KEY),
                ("gpt-b", "sk-second-key-000"),
                ("gpt-a", "sk-second-key-000"),  # the model fault comes first in the queue
                ("gpt-a", "sk-second-key-000"),
            ]
        ]
    assert statuses == [200, 500, 429, 500, 200]


def test_chaos_is_deterministic_for_a_seed():
    def outcomes(seed):
        with FaultInjectingOpenAIServer(seed=seed) as server:
            server.chaos(rate=0.5)
            for index in range(24):
                body = {"model": "m", "messages": [{"role": "user", "content": f"q{index}"}]}
                with contextlib.suppress(httpx.HTTPError):  # cut_stream
                    post(server, body)
            served = server.requests
            server.chaos(rate=0)
            post(server, {"model": "m", "messages": [{"role": "user", "content": "calm"}]})
            assert server.requests[-1].outcome == "ok"
        assert all(r.chaos == (r.outcome != "ok") for r in served)
        return [r.outcome for r in served]

    first = outcomes(7)
    assert first == outcomes(7)
    assert first != outcomes(8)
    assert "ok" in first and {"rate_limit", "overloaded", "server_error", "cut_stream"} & set(first)


# --------------------------------------------------------------------------- models and keys


@pytest.mark.anyio
async def test_overflow_by_size_and_unknown_models(provider):
    with FaultInjectingOpenAIServer(models={"tiny": 40, "big": 100_000}) as server:
        _, ok = await run(provider, model_for(server, "tiny"), ask("hi"))
        _, overflow = await run(provider, model_for(server, "tiny"), ask("word " * 40))
        _, roomy = await run(provider, model_for(server, "big"), ask("word " * 40))
        _, unknown = await run(provider, model_for(server, "nope"))
        served = server.requests
    assert ok.stop_reason == roomy.stop_reason == "stop"
    assert (overflow.error_status, overflow.error_code) == (400, "context_length_exceeded")
    assert "maximum context length is 40 tokens" in overflow.error_message
    assert f"resulted in {served[1].estimated_tokens} tokens" in overflow.error_message
    assert is_context_overflow_error(overflow.error_message)
    assert (unknown.error_status, unknown.error_code) == (404, "model_not_found")
    assert reason_of(unknown) == "model_not_found"
    assert [r.outcome for r in served] == ["ok", "overflow", "ok", "unknown_model"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("key", "status", "code", "reason"),
    [
        ("sk-limited-key-0123456", 429, "rate_limit_exceeded", "rate_limit"),
        ("sk-invalid-key-0123456", 401, "invalid_api_key", "auth"),
        ("sk-billing-key-0123456", 429, "insufficient_quota", "billing"),
        ("sk-overloaded-key-0123", 503, "overloaded", "overloaded"),
        ("sk-unknown-key-0123456", 401, "invalid_api_key", "auth"),
        (None, 401, "invalid_api_key", "auth"),
    ],
)
async def test_key_behaviours(provider, key, status, code, reason):
    keys = {
        GOOD_KEY: KeyBehavior.OK,
        "sk-limited-key-0123456": "rate_limited",
        "sk-invalid-key-0123456": "invalid",
        "sk-billing-key-0123456": "billing",
        "sk-overloaded-key-0123": "overloaded",
    }
    with FaultInjectingOpenAIServer(keys=keys) as server:
        _, message = await run(provider, model_for(server), api_key=key)
        _, good = await run(provider, model_for(server), api_key=GOOD_KEY)
        served = server.requests
    assert (message.error_status, message.error_code) == (status, code)
    assert reason_of(message) == reason
    if status == 429 and code == "rate_limit_exceeded":
        assert message.error_retry_after_ms == 1000
    assert good.stop_reason == "stop"
    assert served[0].api_key_fingerprint == api_key_fingerprint(key)
    if key is not None:
        assert key not in repr(served) and key not in (message.error_body or "")


def test_set_key_and_reset():
    with FaultInjectingOpenAIServer(keys={GOOD_KEY: "ok"}) as server:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        assert post(server, body, GOOD_KEY).status_code == 200
        server.set_key(GOOD_KEY, "rate_limited")
        limited = post(server, body, GOOD_KEY)
        assert (limited.status_code, limited.headers["retry-after"]) == (429, "1")
        assert limited.json()["error"]["type"] == "requests"
        server.set_key("sk-new-key-00000000", KeyBehavior.OK)
        assert post(server, body, "sk-new-key-00000000").status_code == 200
        server.inject(Fault("server_error"))
        server.enqueue(Reply(text="scripted"))
        server.reset()
        assert server.requests == []
        assert (
            post(server, body, GOOD_KEY).json()["choices"][0]["message"]["content"] == "You said: x"
        )
        assert post(server, body, "sk-new-key-00000000").status_code == 401
    with pytest.raises(ValueError):
        server.set_key(GOOD_KEY, "sometimes")
    with pytest.raises(ValueError):
        Fault("explode")
    with pytest.raises(ValueError):
        Fault("status")


@pytest.mark.anyio
async def test_replies_replace_the_brain_for_matching_models(provider, openai_server):
    openai_server.enqueue(
        Reply(text="for b", model="gpt-b"),
        Reply(reasoning="think", text="partial", finish_reason="length"),
        Reply(tool_calls=[("lookup", {"q": "x", "exact": False})]),
    )
    _, first = await run(provider, model_for(openai_server, "gpt-a"))
    _, second = await run(provider, model_for(openai_server, "gpt-b"))
    _, third = await run(provider, model_for(openai_server, "gpt-a"))
    assert (first.text(), first.stop_reason) == ("partial", "length")
    assert first.content[0].thinking == "think"
    assert second.text() == "for b"
    assert third.stop_reason == "toolUse"
    assert third.content[0].arguments == {"q": "x", "exact": False}
    assert [r.outcome for r in openai_server.requests] == ["reply"] * 3


def test_requests_never_hold_the_key():
    secret = "sk-proj-very-secret-key-abcdef"
    with FaultInjectingOpenAIServer(keys={secret: "invalid"}) as server:
        server.inject(Fault("rate_limit", api_key=secret))  # repr of the fault hides it too
        assert secret not in repr(Fault("rate_limit", api_key=secret))
        denied = post(
            server, {"model": "m", "messages": [{"role": "user", "content": "x"}]}, secret
        )
        served = server.requests
    assert denied.status_code == 401
    assert secret not in denied.text
    assert secret not in repr(served) and secret not in str(served[0].body)
    fingerprint = served[0].api_key_fingerprint
    assert fingerprint == api_key_fingerprint(secret) and fingerprint.startswith("sk-p...")
    assert api_key_fingerprint("short") == f"...{api_key_fingerprint('short')[3:]}"  # no prefix
    assert isinstance(served[0], ServedRequest)


# --------------------------------------------------------------------------- lifecycle


def test_stop_is_fast_and_idempotent_with_a_hung_client():
    server = FaultInjectingOpenAIServer().start()
    server.inject(Fault("hang"), Fault("hang", before_headers=True))
    errors: list[BaseException] = []

    def client():
        try:
            with httpx.stream(
                "POST",
                server.base_url + "/chat/completions",
                json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]},
                timeout=30,
            ) as response:
                response.read()
        except httpx.HTTPError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(2)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 5
    while len(server.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [r.outcome for r in server.requests] == ["hang", "hang"]
    started = time.monotonic()
    server.stop()
    assert time.monotonic() - started < 1.5
    server.stop()  # idempotent
    for thread in threads:
        thread.join(5)
    assert len(errors) == 2  # both clients saw the connection go
    with pytest.raises(RuntimeError):
        server.base_url  # noqa: B018


def test_openai_server_imports_without_pytest():
    code = (
        "import sys; sys.modules['pytest'] = None\n"
        "from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer\n"
        "import openclaw_runtime.testing as kit\n"
        "assert 'openai_server' not in kit.__all__ and 'Fault' in kit.__all__\n"
        "with FaultInjectingOpenAIServer() as server:\n"
        "    print(server.base_url)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONWARNINGS": "error"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("http://127.0.0.1:")
