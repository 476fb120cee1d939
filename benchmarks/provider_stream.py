"""Streaming throughput: our OpenAI-compatible provider vs the ``openai`` SDK and a plain loop.

Every client consumes the same Chat Completions SSE stream (``--chunks`` content deltas, a
finish chunk, a usage chunk, ``[DONE]``) from a local server (uvicorn on 127.0.0.1) that runs
in a **separate process**, so its CPU does not share the client's GIL. Two framings:

* ``batched``: the whole body in one write (the server is not the bottleneck);
* ``per-event``: one write per event, the shape real providers send (TCP_NODELAY, so each
  event leaves as its own segment; the client reads whatever has arrived).

Clients, measured round by round in one interleaved run (median of ``--rounds``):

* ``openclaw-runtime``: ``OpenAICompatProvider.stream_fn``, every event iterated;
* ``openai SDK``: ``AsyncOpenAI`` streaming, each chunk's ``delta.content`` collected;
* ``httpx+orjson``: the loop a careful hand-written client would be — ``aiter_bytes``, split
  lines, ``orjson.loads`` each ``data:`` line, collect ``choices[0].delta.content`` — with no
  events, no timeouts, no error handling: the peer the issue's ≥ 0.9× target names;
* ``httpx floor``: read the bytes and nothing else.

Run:  .venv/bin/python benchmarks/provider_stream.py [--chunks 10000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import time
from typing import Any

import anyio
import httpx
import orjson
from peers import require_peer

from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.providers.openai_compat import OpenAICompatProvider
from openclaw_runtime.testing.server import LocalHTTPServer, ScriptedReply, sse_body

FRAMINGS = ("batched", "per-event")


def stream_events(chunks: int) -> list[dict[str, Any]]:
    words = ["alpha ", "beta ", "gamma ", "delta "]
    base = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1}
    events: list[dict[str, Any]] = [
        {
            **base,
            "model": "bench",
            "choices": [{"index": 0, "delta": {"content": words[i % 4]}, "finish_reason": None}],
        }
        for i in range(chunks)
    ]
    events.append(
        {**base, "model": "bench", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    )
    usage = {"prompt_tokens": 10, "completion_tokens": chunks, "total_tokens": chunks + 10}
    events.append({**base, "model": "bench", "choices": [], "usage": usage})
    return events


def reply_for(framing: str, chunks: int) -> ScriptedReply:
    events = stream_events(chunks)
    if framing == "batched":
        return ScriptedReply.sse(events)
    parts: list[Any] = [sse_body([event], done=False) for event in events]
    parts.append(b"data: [DONE]\n\n")
    return ScriptedReply(body=parts)


def serve(framing: str, chunks: int, replies: int, conn: Any) -> None:
    """The server process: answer ``replies`` requests with the same stream, then idle."""
    reply = reply_for(framing, chunks)
    with LocalHTTPServer() as server:
        server.enqueue(*([reply] * replies))
        conn.send(server.base_url)
        conn.recv()  # until the parent says stop


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(
        e["choices"][0]["delta"].get("content") or "" for e in events if e.get("choices")
    )


async def ours(base_url: str, model: Model, expected: str) -> tuple[float, float]:
    provider = OpenAICompatProvider()
    context = Context("", [UserMessage(content="go")])
    await provider.stream_fn(model, context, StreamOptions(api_key="x")).result()  # warm-up
    start, cpu = time.perf_counter(), time.thread_time()
    stream = provider.stream_fn(model, context, StreamOptions(api_key="x"))
    async for event in stream:
        if event.type == "text_delta":
            pass
    elapsed = (time.perf_counter() - start, time.thread_time() - cpu)
    message = await stream.result()
    await provider.aclose()
    assert message.stop_reason == "stop" and message.content[0].text == expected, "wrong stream"
    return elapsed


async def sdk(base_url: str, expected: str) -> tuple[float, float]:
    from openai import AsyncOpenAI  # lazy: the peer, imported only when measured

    client = AsyncOpenAI(base_url=base_url + "/v1", api_key="x", max_retries=0)
    messages: Any = [{"role": "user", "content": "go"}]
    warm = await client.chat.completions.create(model="bench", messages=messages, stream=True)
    async for _ in warm:
        pass
    start, cpu = time.perf_counter(), time.thread_time()
    stream = await client.chat.completions.create(model="bench", messages=messages, stream=True)
    text = []
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text.append(chunk.choices[0].delta.content)
    elapsed = (time.perf_counter() - start, time.thread_time() - cpu)
    await client.close()
    assert "".join(text) == expected, "wrong stream"
    return elapsed


async def _plain_once(client: httpx.AsyncClient, url: str) -> str:
    text: list[str] = []
    async with client.stream(
        "POST",
        url,
        content=b'{"model":"bench","stream":true}',
        headers={"content-type": "application/json", "accept": "text/event-stream"},
    ) as response:
        rest = b""
        async for raw in response.aiter_bytes():
            lines = (rest + raw).split(b"\n")
            rest = lines.pop()
            for line in lines:
                if line.startswith(b"data: ") and line != b"data: [DONE]":
                    chunk = orjson.loads(line[6:])
                    choices = chunk.get("choices")
                    if choices:
                        content = choices[0]["delta"].get("content")
                        if content:
                            text.append(content)
    return "".join(text)


async def plain(base_url: str, expected: str) -> tuple[float, float]:
    url = base_url + "/v1/chat/completions"
    async with httpx.AsyncClient() as client:
        await _plain_once(client, url)  # warm-up
        start, cpu = time.perf_counter(), time.thread_time()
        text = await _plain_once(client, url)
        elapsed = (time.perf_counter() - start, time.thread_time() - cpu)
    assert text == expected, "wrong stream"
    return elapsed


async def floor(base_url: str) -> tuple[float, float]:
    url = base_url + "/v1/chat/completions"
    async with httpx.AsyncClient() as client:
        for timed in (False, True):
            start, cpu = time.perf_counter(), time.thread_time()
            async with client.stream("POST", url, content=b"{}") as response:
                async for _ in response.aiter_raw():
                    pass
            if timed:
                return (time.perf_counter() - start, time.thread_time() - cpu)
    raise AssertionError("unreachable")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--framing", choices=[*FRAMINGS, "both"], default="both")
    parser.add_argument("--no-sdk", action="store_true", help="skip the (slow) openai SDK")
    args = parser.parse_args()
    if not args.no_sdk:
        require_peer(parser, "openai", "the openai SDK, the peer (or pass --no-sdk)")
    framings = FRAMINGS if args.framing == "both" else (args.framing,)
    total = args.chunks + 2
    expected = text_of(stream_events(args.chunks))
    clients = ["openclaw-runtime", "httpx+orjson", "httpx floor"]
    if not args.no_sdk:
        clients.insert(1, "openai SDK")
    ctx = multiprocessing.get_context("spawn")
    servers: dict[str, tuple[Any, Any, str]] = {}
    for framing in framings:
        parent, child = ctx.Pipe()
        proc = ctx.Process(
            target=serve, args=(framing, args.chunks, 2 * len(clients) * args.rounds, child)
        )
        proc.start()
        child.close()  # the server's end: its exit now ends our recv() instead of hanging it
        try:
            servers[framing] = (proc, parent, parent.recv())
        except EOFError:
            raise SystemExit(
                "provider_stream.py: the stream server process ended before it served (its "
                "error is above); the benchmarks need .venv/bin/pip install -r "
                "requirements-test.txt -r benchmarks/requirements.txt"
            ) from None
    results: dict[tuple[str, str], list[tuple[float, float]]] = {
        (f, c): [] for f in framings for c in clients
    }
    load_before = os.getloadavg()
    try:
        for _ in range(args.rounds):
            for framing in framings:
                base_url = servers[framing][2]
                model = Model(
                    id="bench",
                    api="openai-completions",
                    provider="bench",
                    base_url=base_url + "/v1",
                )
                for name in clients:
                    if name == "openclaw-runtime":
                        elapsed = anyio.run(ours, base_url, model, expected)
                    elif name == "openai SDK":
                        elapsed = anyio.run(sdk, base_url, expected)
                    elif name == "httpx+orjson":
                        elapsed = anyio.run(plain, base_url, expected)
                    else:
                        elapsed = anyio.run(floor, base_url)
                    results[(framing, name)].append(elapsed)
    finally:
        for proc, conn, _url in servers.values():
            conn.send("stop")
            proc.join(timeout=10)
    load_after = os.getloadavg()
    print(
        f"stream of {total} chunks, median of {args.rounds} interleaved rounds; "
        f"load average {load_before[0]:.2f} -> {load_after[0]:.2f} (1 min), {os.cpu_count()} CPUs"
    )
    for framing in framings:
        rates = {c: total / statistics.median(w for w, _ in results[(framing, c)]) for c in clients}
        cpu = {c: statistics.median(u for _, u in results[(framing, c)]) / total for c in clients}
        print(f"[{framing}]          wall: chunks/s  µs/chunk   client CPU: µs/chunk")
        for name in clients:
            rate = rates[name]
            print(f"  {name:18s} {rate:12,.0f} {1e6 / rate:9.2f}   {cpu[name] * 1e6:12.2f}")
        for peer in ("openai SDK", "httpx+orjson"):
            if peer in rates:
                by_rate = rates["openclaw-runtime"] / rates[peer]
                by_cpu = cpu[peer] / cpu["openclaw-runtime"]
                print(
                    f"  openclaw-runtime / {peer:13s} = {by_rate:6.2f}x by chunks/s, "
                    f"{by_cpu:6.2f}x by client CPU per chunk"
                )


if __name__ == "__main__":
    main()
