"""The tool policy with Gemini's schema cleaning, through ``Runtime.run`` over real local HTTP
(issue 12 §1), on asyncio and trio: a google model is offered exactly the tools the layers
allow, each one's parameters still cleaned for Gemini, and a call to a filtered-out tool comes
back to the model as an error ``functionResponse`` without running."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from openclaw_runtime_google import (
    GEMINI_UNSUPPORTED_SCHEMA_KEYWORDS,
    GOOGLE_GENERATIVE_AI_API,
)
from openclaw_runtime_google import plugin as google_plugin

from openclaw_runtime.agent import AgentTool
from openclaw_runtime.testing import ScriptedReply

pytestmark = pytest.mark.anyio

CONSTRAINED = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[^/]"},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def frame(parts: list[dict[str, Any]]) -> bytes:
    body = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2, "totalTokenCount": 12},
    }
    return b"data: " + orjson.dumps(body) + b"\r\n\r\n"


def reply(parts: list[dict[str, Any]]) -> ScriptedReply:
    return ScriptedReply(200, {"content-type": "text/event-stream"}, [frame(parts)])


def keywords(schema: Any) -> set[str]:
    """Every key used anywhere in a JSON schema."""
    if isinstance(schema, dict):
        return set(schema) | {k for v in schema.values() for k in keywords(v)}
    if isinstance(schema, list):
        return {k for v in schema for k in keywords(v)}
    return set()


async def test_google_is_offered_the_allowed_tools_with_clean_schemas(
    runtime_factory: Any, local_http_server: Any
) -> None:
    ran: list[str] = []

    def make(name: str) -> AgentTool:
        async def execute(call_id: str, args: dict[str, Any], signal: Any, update: Any) -> str:
            ran.append(name)
            return f"{name} ok"

        return AgentTool(
            name=name, description=f"The {name} tool.", parameters=CONSTRAINED, execute=execute
        )

    runtime = runtime_factory(
        {
            "models": [
                {
                    "id": "gemini-2.5-flash",
                    "api": GOOGLE_GENERATIVE_AI_API,
                    "provider": "google",
                    "baseUrl": local_http_server.base_url,
                    "contextWindow": 1_000_000,
                    "maxTokens": 1024,
                }
            ],
            "agent": {"model": "google/gemini-2.5-flash", "timeout_seconds": 20},
            "auth": {
                "profiles": [
                    {
                        "id": "google:0",
                        "provider": "google",
                        "mode": "api_key",
                        "credential": {"value": "test-google-key-123"},
                    }
                ]
            },
            "tools": {"by_provider": {"google": {"deny": ["group:runtime"]}}},
            "groups": {"*": {"tools": {"allow": ["read", "web_*"]}}},
        },
        plugins=[("google", google_plugin)],
    )
    local_http_server.enqueue(
        reply([{"functionCall": {"name": "exec", "args": {"path": "x"}}}]),
        reply([{"text": "done"}]),
    )
    tools = [make(n) for n in ("read", "exec", "web_fetch", "write")]
    try:
        result = await runtime.run("go", session_id="s-gemini", tools=tools, group_id="chat-1")
    finally:
        await runtime.aclose()  # the provider's HTTP client belongs to this event loop
    assert result.ok, result.error
    first, second = (r.json() for r in local_http_server.requests)
    for body in (first, second):
        (declarations,) = [t["functionDeclarations"] for t in body["tools"]]
        assert [d["name"] for d in declarations] == ["read", "web_fetch"]
        for declaration in declarations:
            assert not keywords(declaration["parameters"]) & set(GEMINI_UNSUPPORTED_SCHEMA_KEYWORDS)
            assert declaration["parameters"]["required"] == ["path"]
    assert ran == []  # exec is denied for google: the call never ran
    responses = [
        part["functionResponse"]
        for content in second["contents"]
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]
    assert [(r["name"], "error" in r["response"]) for r in responses] == [("exec", True)]
