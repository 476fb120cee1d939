"""Streaming throughput: our OpenAI-compatible provider vs the official ``openai`` SDK.

Both clients consume the same Chat Completions SSE stream from the same local server
(uvicorn on 127.0.0.1, the whole body in one write so the server is not the bottleneck) in
one process, one after the other, several rounds; we report chunks per second (median over
rounds) and the ratio. A third line reads the same bytes with httpx and does nothing else:
the floor no client can beat.

Run:  .venv/bin/python benchmarks/provider_stream.py [--chunks 2000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import statistics
import time

import anyio
import httpx

from openclaw_runtime.llm import Context, Model, StreamOptions
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.providers.openai_compat import OpenAICompatProvider
from openclaw_runtime.testing.server import LocalHTTPServer, ScriptedReply


def stream_events(chunks: int) -> list[dict]:
    words = ["alpha ", "beta ", "gamma ", "delta "]
    events = [
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "bench",
            "choices": [{"index": 0, "delta": {"content": words[i % 4]}, "finish_reason": None}],
        }
        for i in range(chunks)
    ]
    events.append(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "bench",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        }
    )
    events.append(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "bench",
            "choices": [],
            "usage": {
                "prompt_tokens": 10,
                "completion_tokens": chunks,
                "total_tokens": chunks + 10,
            },
        }
    )
    return events


async def ours(server: LocalHTTPServer, model: Model, reply: ScriptedReply) -> float:
    provider = OpenAICompatProvider()
    context = Context("", [UserMessage(content="go")])
    server.enqueue(reply)
    await provider.stream_fn(model, context, StreamOptions(api_key="x")).result()  # warm-up
    server.enqueue(reply)
    start = time.perf_counter()
    stream = provider.stream_fn(model, context, StreamOptions(api_key="x"))
    text = []
    async for event in stream:
        if event.type == "text_delta":
            text.append(event.delta)
    elapsed = time.perf_counter() - start
    await provider.aclose()
    return elapsed


async def sdk(server: LocalHTTPServer, reply: ScriptedReply) -> float:
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=server.base_url + "/v1", api_key="x", max_retries=0)
    messages = [{"role": "user", "content": "go"}]
    server.enqueue(reply)
    warm = await client.chat.completions.create(model="bench", messages=messages, stream=True)
    async for _ in warm:
        pass
    server.enqueue(reply)
    start = time.perf_counter()
    stream = await client.chat.completions.create(model="bench", messages=messages, stream=True)
    text = []
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text.append(chunk.choices[0].delta.content)
    elapsed = time.perf_counter() - start
    await client.close()
    return elapsed


async def floor(server: LocalHTTPServer, reply: ScriptedReply) -> float:
    async with httpx.AsyncClient() as client:
        server.enqueue(reply)
        start = time.perf_counter()
        async with client.stream(
            "POST", server.base_url + "/v1/chat/completions", content=b"{}"
        ) as response:
            async for _ in response.aiter_raw():
                pass
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--chunks", type=int, default=10000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    reply = ScriptedReply.sse(stream_events(args.chunks))
    total = args.chunks + 2
    with LocalHTTPServer() as server:
        model = Model(
            id="bench", api="openai-completions", provider="bench", base_url=server.base_url + "/v1"
        )
        results: dict[str, list[float]] = {
            "openclaw-runtime": [],
            "openai SDK": [],
            "httpx floor": [],
        }
        for _ in range(args.rounds):
            results["openclaw-runtime"].append(anyio.run(ours, server, model, reply))
            results["openai SDK"].append(anyio.run(sdk, server, reply))
            results["httpx floor"].append(anyio.run(floor, server, reply))
    rates = {name: total / statistics.median(times) for name, times in results.items()}
    size_kib = len(reply.body[0]) / 1024
    print(f"stream of {total} chunks ({size_kib:.0f} KiB), median of {args.rounds} rounds")
    for name, rate in rates.items():
        per_chunk = 1e6 / rate
        print(f"  {name:18s} {rate:12,.0f} chunks/s   {per_chunk:8.2f} µs/chunk")
    ratio = rates["openclaw-runtime"] / rates["openai SDK"]
    print(f"  ratio openclaw-runtime / openai SDK = {ratio:.1f}x")


if __name__ == "__main__":
    main()
