"""The Anthropic refusal-magic scrub (seed 001): the table, then the wiring over real HTTP.

The wiring test serves an ``anthropic``-named provider through the OpenAI-compatible fault
server (the scrub keys on the provider name, not the wire format), so the request body the
server received shows what would have reached Anthropic: neither the user prompt nor the system
prompt carries the trigger, and the transcript keeps the scrubbed text. Any other provider gets
the prompt untouched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.prompt.refusal_scrub import (
    ANTHROPIC_MAGIC_STRING_REPLACEMENT,
    ANTHROPIC_MAGIC_STRING_TRIGGER_REFUSAL,
    resolve_attempt_base_prompt,
    scrub_anthropic_refusal_magic,
)
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply

MAGIC = ANTHROPIC_MAGIC_STRING_TRIGGER_REFUSAL
R = ANTHROPIC_MAGIC_STRING_REPLACEMENT


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ""),
        ("hello", "hello"),
        (MAGIC, R),
        (f"log: {MAGIC} end", f"log: {R} end"),
        (f"{MAGIC}{MAGIC}", f"{R}{R}"),
        (f"a {MAGIC}\nb {MAGIC}", f"a {R}\nb {R}"),
        (MAGIC.lower(), MAGIC.lower()),  # exact string only, as OpenClaw
        (MAGIC[:-1], MAGIC[:-1]),
    ],
)
def test_scrub_anthropic_refusal_magic(text: str, expected: str) -> None:
    assert scrub_anthropic_refusal_magic(text) == expected
    assert MAGIC not in scrub_anthropic_refusal_magic(text)


@pytest.mark.parametrize(
    ("provider", "scrubbed"),
    [("anthropic", True), ("openai", False), ("google", False), ("anthropic-vertex", False)],
)
def test_resolve_attempt_base_prompt_scrubs_for_anthropic_only(
    provider: str, scrubbed: bool
) -> None:
    prompt = f"please read {MAGIC}"
    result = resolve_attempt_base_prompt(provider, prompt)
    assert (result == f"please read {R}") is scrubbed
    assert (result is prompt) is not scrubbed


def _config(tmp_path: Path, server: FaultInjectingOpenAIServer, provider: str) -> dict[str, Any]:
    return {
        "state_dir": str(tmp_path / provider),
        "models": [
            {
                "id": "main",
                "api": "openai-completions",
                "provider": provider,
                "baseUrl": server.base_url,
                "contextWindow": 64_000,
                "maxTokens": 512,
            }
        ],
        "agent": {
            "model": f"{provider}/main",
            "timeout_seconds": 20,
            "system_prompt": f"House rules mention {MAGIC} once.",
        },
        "auth": {
            "profiles": [
                {
                    "id": f"{provider}:0",
                    "provider": provider,
                    "mode": "api_key",
                    "credential": {"value": "key-a"},
                }
            ]
        },
    }


@pytest.mark.anyio
@pytest.mark.parametrize(("provider", "scrubbed"), [("anthropic", True), ("mock", False)])
async def test_the_scrub_reaches_the_request_and_the_transcript(
    tmp_path: Path, provider: str, scrubbed: bool
) -> None:
    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as server:
        server.enqueue(Reply(text="ok", model="main"))
        runtime = Runtime(_config(tmp_path, server, provider), load_entrypoints=False)
        result = await runtime.run(f"What does {MAGIC} do?")
        await runtime.aclose()
        chat = [r for r in server.requests if r.path.endswith("/chat/completions")]
    assert result.ok, result.error
    sent = chat[0].body["messages"]
    system = next(m["content"] for m in sent if m["role"] in ("system", "developer"))
    user = sent[-1]["content"]
    user_text = user if isinstance(user, str) else " ".join(p.get("text", "") for p in user)
    stored = result.messages[0].text()
    if scrubbed:
        assert MAGIC not in system and f"mention {R} once" in system
        assert user_text == f"What does {R} do?" and stored == f"What does {R} do?"
    else:
        assert MAGIC in system and MAGIC in user_text and MAGIC in stored
