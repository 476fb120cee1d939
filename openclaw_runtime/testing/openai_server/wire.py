"""Rendering: a ``Completion`` as OpenAI's streamed ``chat.completion.chunk`` events or as one
``chat.completion`` object, with usage counted the way the server estimates it; and the
``GET /v1/models`` listing."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from .plans import Completion

__all__ = ["completion_object", "models_payload", "sse_events"]


def split(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def usage(completion: Completion) -> dict[str, int]:
    produced = completion.text + completion.reasoning
    produced += "".join(name + args for _, name, args in completion.tool_calls)
    output = max(1, math.ceil(len(produced) / 4))
    prompt = completion.prompt_tokens
    return {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}


def sse_events(
    completion: Completion, response_id: str, chunk_chars: int, include_usage: bool
) -> list[dict[str, Any]]:
    """The ``chat.completion.chunk`` objects of one streamed answer, in order."""
    base = {
        "id": response_id,
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": completion.model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**base, "choices": [choice]}

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"reasoning_content": p}) for p in split(completion.reasoning, chunk_chars)]
    events += [chunk({"content": p}) for p in split(completion.text, chunk_chars)]
    for index, (call_id, name, arguments) in enumerate(completion.tool_calls):
        opening = {"index": index, "id": call_id, "type": "function"}
        opening["function"] = {"name": name, "arguments": ""}
        events.append(chunk({"tool_calls": [opening]}))
        # arguments always arrive in two pieces or more, as they do from OpenAI
        size = max(1, min(chunk_chars, math.ceil(len(arguments) / 2)))
        for piece in split(arguments, size):
            events.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
    events.append(chunk({}, completion.finish_reason))
    if include_usage:
        events.append({**base, "choices": [], "usage": usage(completion)})
    return events


def completion_object(completion: Completion, response_id: str) -> dict[str, Any]:
    """The ``chat.completion`` object of a non-streamed answer."""
    message: dict[str, Any] = {"role": "assistant", "content": completion.text or None}
    if completion.reasoning:
        message["reasoning_content"] = completion.reasoning
    if completion.tool_calls:
        message["tool_calls"] = [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            for call_id, name, args in completion.tool_calls
        ]
    choice = {
        "index": 0,
        "message": message,
        "logprobs": None,
        "finish_reason": completion.finish_reason,
    }
    return {
        "id": response_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": completion.model,
        "choices": [choice],
        "usage": usage(completion),
    }


def models_payload(models: Mapping[str, int]) -> dict[str, Any]:
    """The ``GET /v1/models`` listing: every served model with its context window."""
    return {
        "object": "list",
        "data": [
            {
                "id": model,
                "object": "model",
                "created": 0,
                "owned_by": "openclaw-testing",
                "context_window": window,
            }
            for model, window in models.items()
        ],
    }
