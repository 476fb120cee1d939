"""A local server speaking Anthropic's Messages API that can reject thinking signatures.

Anthropic signs every thinking block it returns and rejects a replayed block whose signature
it no longer accepts (made for another key or model, expired, altered) with a 400
``invalid_request_error``: ``messages.N.content.M: Invalid `signature` in `thinking` block``.
A client that keeps the block in its transcript resends it on every later turn and the session
is stuck. This server reproduces that over real HTTP (``LocalHTTPServer`` underneath):

* every answer is a thinking block signed ``sig-<n>`` followed by the text ``answer <n>``
  (``n`` counts the answers), as SSE frames of the Messages API;
* ``reject_signature(sig)`` makes every later request that replays ``sig`` in an assistant
  turn fail with Anthropic's 400 (as the real API would, every time); ``rejections`` counts
  them and ``replayed_signatures(request)`` lists what a recorded request replayed;
* ``reject_all_signatures = True`` rejects any replayed signature (a provider that accepts
  none), for bounding the recovery;
* ``enqueue_tool_use(name, arguments)`` scripts the next answer as a tool call instead:
  a thinking block signed ``sig-tool-<n>`` (or none, ``thinking=False``) and a ``tool_use``
  block with the id ``toolu_<n>``, ``stop_reason`` ``tool_use`` (for tool loops);
* ``context_window`` (tokens; None: unlimited) refuses, as Anthropic does, a request whose
  estimated input plus ``max_tokens`` (which includes the thinking budget) exceeds it:
  ``input length and `max_tokens` exceed context limit: I + M > W``; ``overflows`` counts
  them.
"""

from __future__ import annotations

from typing import Any

import orjson

from .server import LocalHTTPServer, RecordedRequest, ScriptedReply

__all__ = [
    "AnthropicMessagesServer",
    "context_limit_error",
    "estimate_input_tokens",
    "invalid_signature_error",
]


def invalid_signature_error(message_index: int, block_index: int) -> dict[str, Any]:
    """Anthropic's error body for a rejected thinking signature."""
    return {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": (
                f"messages.{message_index}.content.{block_index}: "
                "Invalid `signature` in `thinking` block"
            ),
        },
        "request_id": "req_local_signature",
    }


def context_limit_error(input_tokens: int, max_tokens: int, window: int) -> dict[str, Any]:
    """Anthropic's error body for input plus ``max_tokens`` above the context window."""
    return {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": (
                f"input length and `max_tokens` exceed context limit: {input_tokens} + "
                f"{max_tokens} > {window}, decrease input length or `max_tokens` and try again"
            ),
        },
        "request_id": "req_local_context",
    }


def estimate_input_tokens(body: dict[str, Any]) -> int:
    """A deterministic input estimate: the JSON of system, messages and tools, 4 bytes a
    token (what the server and its tests agree on, not Anthropic's tokenizer)."""
    parts = {key: body.get(key) for key in ("system", "messages", "tools")}
    return max(1, len(orjson.dumps(parts)) // 4)


def _frame(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: ".encode() + orjson.dumps(data) + b"\n\n"


def _message(message_id: str, model: str, blocks: list[bytes], stop: str, output: int) -> bytes:
    """A whole Messages API stream: its start, the ``blocks``' frames, its end."""
    start: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": model,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 1},
    }
    end = {
        "type": "message_delta",
        "delta": {"stop_reason": stop, "stop_sequence": None},
        "usage": {"output_tokens": output},
    }
    return b"".join(
        [
            _frame("message_start", {"type": "message_start", "message": start}),
            *blocks,
            _frame("message_delta", end),
            _frame("message_stop", {"type": "message_stop"}),
        ]
    )


def _block(index: int, block: dict[str, Any], *deltas: dict[str, Any]) -> bytes:
    """One content block's frames: its start, its deltas, its stop."""
    start = {"type": "content_block_start", "index": index, "content_block": block}
    frames = [_frame("content_block_start", start)]
    for delta in deltas:
        body = {"type": "content_block_delta", "index": index, "delta": delta}
        frames.append(_frame("content_block_delta", body))
    frames.append(_frame("content_block_stop", {"type": "content_block_stop", "index": index}))
    return b"".join(frames)


def _thought(index: int, text: str, signature: str) -> bytes:
    return _block(
        index,
        {"type": "thinking", "thinking": ""},
        {"type": "thinking_delta", "thinking": text},
        {"type": "signature_delta", "signature": signature},
    )


def _answer_stream(number: int, model: str) -> bytes:
    """Answer ``number``: signed thinking, then text."""
    blocks = [
        _thought(0, f"reasoning {number}", f"sig-{number}"),
        _block(1, {"type": "text", "text": ""}, {"type": "text_delta", "text": f"answer {number}"}),
    ]
    return _message(f"msg_{number:04d}", model, blocks, "end_turn", 12)


def _tool_use_stream(
    number: int, model: str, name: str, arguments: dict[str, Any], thinking: bool
) -> bytes:
    """Tool call ``number``: signed thinking (optionally), then one ``tool_use`` block."""
    blocks = [_thought(0, f"which tool {number}", f"sig-tool-{number}")] if thinking else []
    call = {"type": "tool_use", "id": f"toolu_{number:04d}", "name": name, "input": {}}
    json = {"type": "input_json_delta", "partial_json": orjson.dumps(arguments).decode()}
    blocks.append(_block(len(blocks), call, json))
    return _message(f"msg_tool_{number:04d}", model, blocks, "tool_use", 9)


class AnthropicMessagesServer(LocalHTTPServer):
    """``POST /v1/messages`` answered from the request (module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.rejected: set[str] = set()
        self.reject_all_signatures = False
        self.rejections = 0
        self.answers = 0
        self.context_window: int | None = None
        self.overflows = 0
        self.tool_uses = 0

    def reset(self) -> None:
        """Forget the script and recorded requests, and number answers from 1 again (so a
        repeated scenario gets the same ids and signatures)."""
        super().reset()
        self.answers = self.tool_uses = 0

    def enqueue_tool_use(
        self, name: str, arguments: dict[str, Any], *, thinking: bool = True, model: str = ""
    ) -> str:
        """Script the next answer as a call of ``name`` (module docstring); its call id."""
        self.tool_uses += 1
        number = self.tool_uses
        body = _tool_use_stream(number, model or "claude-local", name, arguments, thinking)
        self.enqueue(ScriptedReply(200, {"content-type": "text/event-stream"}, [body]))
        return f"toolu_{number:04d}"

    def reject_signature(self, signature: str) -> None:
        """From now on, reject every request that replays ``signature``."""
        self.rejected.add(signature)

    @staticmethod
    def replayed_signatures(request: RecordedRequest) -> list[tuple[int, int, str]]:
        """``(message index, block index, signature)`` of every signed thinking block the
        request replays in an assistant turn."""
        found = []
        body = request.json()
        for m_index, message in enumerate(body.get("messages") or []):
            content = message.get("content")
            if message.get("role") != "assistant" or not isinstance(content, list):
                continue
            for b_index, block in enumerate(content):
                if isinstance(block, dict) and block.get("type") == "thinking":
                    signature = block.get("signature")
                    if isinstance(signature, str):
                        found.append((m_index, b_index, signature))
        return found

    def next_reply(self, request: RecordedRequest) -> ScriptedReply:
        if self.script:  # a scripted reply still wins (error injection)
            return self.script.popleft()
        if request.method != "POST" or not request.path.endswith("/messages"):
            return ScriptedReply.text(404, "not found")
        for m_index, b_index, signature in self.replayed_signatures(request):
            if self.reject_all_signatures or signature in self.rejected:
                self.rejections += 1
                return ScriptedReply.json(400, invalid_signature_error(m_index, b_index))
        body = request.json()
        if self.context_window is not None:
            used = estimate_input_tokens(body)
            max_tokens = int(body.get("max_tokens") or 0)
            if used + max_tokens > self.context_window:
                self.overflows += 1
                error = context_limit_error(used, max_tokens, self.context_window)
                return ScriptedReply.json(400, error)
        self.answers += 1
        model = str(body.get("model") or "claude-local")
        return ScriptedReply(
            200, {"content-type": "text/event-stream"}, [_answer_stream(self.answers, model)]
        )
