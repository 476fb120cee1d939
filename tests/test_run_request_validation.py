"""``RunRequest`` rejects bad input up front, with an error that names the field.

Every field is checked when the request is built: a wrong type is a ``TypeError``, a bad
value a ``ValueError``, and the message starts with ``RunRequest.<field>`` (the index too for
an item of a list) and says what was expected. Before, a new user's mistakes (``tools=None``,
one tool not in a list, a tool's name instead of the tool, ``fallbacks="a/b"``) surfaced as
bare errors deep inside the run, or as an ``ExceptionGroup`` escaping ``Runtime.run``.
``None`` means "none" for ``tools``, ``images`` and ``messaging_tool_sent_texts``. Texts,
prompts and provenance are never echoed in a message (they may hold secrets).
A real run (local OpenAI-compatible server, asyncio and trio) raises before anything runs:
no request sent, no event, no session file.
"""

from __future__ import annotations

import re
from collections import UserList
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime, tool
from openclaw_runtime.abort import AbortController
from openclaw_runtime.events import Event
from openclaw_runtime.messages import ImageContent
from openclaw_runtime.runner.request import RunRequest
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply
from tests.run_support import mock_openai_config, read

SECRET = "sk-" + "a1B2c3D4e5" * 4
IMAGE = ImageContent(data="aGk=", mime_type="image/png")


def plain_function(path: str) -> str:
    return path


async def plain_coroutine(path: str) -> str:
    return path


@tool(name="read")
async def other_read(path: str) -> str:
    """Another tool of the same name."""
    return path


def one_name() -> Iterator[str]:
    yield "mock/main"


class Text(str):
    """A ``str`` subclass: passes wherever a str does."""


def case_id(value: Any) -> str:
    """A stable test id: reprs without memory addresses (a generator, a sentinel)."""
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, dict):
        return ",".join(f"{k}={case_id(v)}" for k, v in value.items())
    text = repr(value)
    return type(value).__name__ if " at 0x" in text else text[:40]


# --------------------------------------------------------------------------- bad input

#: (keywords, exception, the message starts with, then contains)
BAD: list[tuple[dict[str, Any], type[Exception], str, str]] = [
    # the three sequences
    ({"tools": read}, TypeError, "RunRequest.tools must be a list", "wrap one tool in a list"),
    ({"tools": "read"}, TypeError, "RunRequest.tools must be a list", "got str 'read'"),
    ({"tools": ["read"]}, TypeError, "RunRequest.tools[0] must be an AgentTool", "not its name"),
    ({"tools": [read, plain_function]}, TypeError, "RunRequest.tools[1] ", "@tool"),
    ({"tools": (plain_coroutine,)}, TypeError, "RunRequest.tools[0] ", "'plain_coroutine'"),
    ({"tools": plain_function}, TypeError, "RunRequest.tools must be a list", "@tool"),
    ({"tools": {"read": read}}, TypeError, "RunRequest.tools must be a list", "got dict"),
    ({"tools": {"read"}}, TypeError, "RunRequest.tools must be a list", "not accepted"),
    ({"tools": (t for t in [read])}, TypeError, "RunRequest.tools must be a list", "generator"),
    ({"tools": [read, None]}, TypeError, "RunRequest.tools[1] must be an AgentTool", "None"),
    ({"tools": (read, read)}, ValueError, "RunRequest.tools[1] is named 'read'", "twice"),
    (
        {"tools": [read, other_read]},
        ValueError,
        "RunRequest.tools[1] is named 'read', as RunRequest.tools[0] is",
        "must be unique",
    ),
    ({"images": IMAGE}, TypeError, "RunRequest.images must be a list", "wrap one"),
    ({"images": ["aGk="]}, TypeError, "RunRequest.images[0] must be an ImageContent", "str"),
    ({"images": b"png"}, TypeError, "RunRequest.images must be a list", "bytes"),
    ({"messaging_tool_sent_texts": "sent"}, TypeError, "RunRequest.messaging_tool_sent_", "str"),
    (
        {"messaging_tool_sent_texts": ["a", 5]},
        TypeError,
        "RunRequest.messaging_tool_sent_texts[1]",
        "",
    ),
    ({"messaging_tool_sent_texts": iter(["a"])}, TypeError, "RunRequest.messaging_tool_", "list("),
    # fallbacks
    ({"fallbacks": "mock/main"}, TypeError, "RunRequest.fallbacks must be a list", "['mock/main']"),
    ({"fallbacks": [5]}, TypeError, "RunRequest.fallbacks[0] must be a model name", "5"),
    ({"fallbacks": ["mock/main", " "]}, ValueError, "RunRequest.fallbacks[1] ", "' '"),
    ({"fallbacks": one_name()}, TypeError, "RunRequest.fallbacks must be a list", "generator"),
    # str | None fields
    *[
        ({name: 5}, TypeError, f"RunRequest.{name} must be a str or None", "got 5")
        for name in (
            "session_id",
            "session_key",
            "model",
            "provider",
            "system_prompt",
            "lane",
            "run_id",
            "current_message_id",
            "sender_id",
            "group_id",
            "auth_profile",
        )
    ],
    ({"session_key": b"chat:1"}, TypeError, "RunRequest.session_key must be a str", "bytes"),
    # trigger and thinking level
    ({"trigger": None}, TypeError, "RunRequest.trigger must be a str", "got None"),
    ({"trigger": 1}, TypeError, "RunRequest.trigger must be a str", "got 1"),
    ({"thinking_level": "High"}, ValueError, "RunRequest.thinking_level must be one of", "'High'"),
    ({"thinking_level": ["low"]}, TypeError, "RunRequest.thinking_level must be one of", "list"),
    # numbers
    ({"timeout_s": "5"}, TypeError, "RunRequest.timeout_s must be a number", "str '5'"),
    ({"timeout_s": True}, TypeError, "RunRequest.timeout_s must be a number", "True"),
    ({"timeout_s": float("nan")}, ValueError, "RunRequest.timeout_s must be >= 0", "nan"),
    ({"timeout_s": -1}, ValueError, "RunRequest.timeout_s must be >= 0", "-1"),
    ({"idle_timeout_s": "1"}, TypeError, "RunRequest.idle_timeout_s must be a number", "str"),
    ({"idle_timeout_s": 0}, ValueError, "RunRequest.idle_timeout_s must be > 0", "0"),
    ({"max_tokens": "100"}, ValueError, "RunRequest.max_tokens must be a positive integer", ""),
    # the rest
    ({"input_provenance": "cron"}, TypeError, "RunRequest.input_provenance must be a mapping", ""),
    ({"abort_signal": AbortController()}, TypeError, "RunRequest.abort_signal must be", ""),
    ({"block_streaming": "yes"}, TypeError, "RunRequest.block_streaming must be a bool", "yes"),
    ({"lock_auth_profile": 1, "auth_profile": "a"}, TypeError, "RunRequest.lock_auth_profile", ""),
    (
        {"lock_auth_profile": True},
        ValueError,
        "RunRequest.lock_auth_profile needs auth_profile",
        "",
    ),
    ({"sender_is_owner": "yes"}, TypeError, "RunRequest.sender_is_owner must be a bool", "str"),
    ({"verbose": "loud"}, ValueError, "RunRequest.verbose must be a bool or off/on/full", ""),
    ({"on_block_reply": "print"}, TypeError, "RunRequest.on_block_reply must be callable", ""),
    ({"prompt": None}, TypeError, "RunRequest.prompt must be a str", "NoneType"),
]


@pytest.mark.parametrize(("given", "error", "start", "fragment"), BAD, ids=case_id)
def test_bad_input_is_an_error_naming_the_field(
    given: dict[str, Any], error: type[Exception], start: str, fragment: str
) -> None:
    with pytest.raises(error) as raised:
        RunRequest(**{"prompt": "hi", **given})
    assert type(raised.value) is error  # a ValueError is not a TypeError and vice versa
    message = str(raised.value)
    assert message.startswith(start), message
    assert fragment in message, message


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"system_prompt": [SECRET]}, "system_prompt"),
        ({"input_provenance": [SECRET]}, "input_provenance"),
        ({"messaging_tool_sent_texts": SECRET}, "messaging_tool_sent_texts"),
        ({"messaging_tool_sent_texts": [SECRET.encode()]}, "messaging_tool_sent_texts[0]"),
        ({"images": [SECRET]}, "images[0]"),
        ({"prompt": SECRET.encode()}, "prompt"),
    ],
)
def test_an_error_never_shows_texts_prompts_or_provenance(
    given: dict[str, Any], field: str
) -> None:
    with pytest.raises(TypeError) as raised:
        RunRequest(**{"prompt": "hi", **given})
    assert str(raised.value).startswith(f"RunRequest.{field} ")
    assert "a1B2c3D4e5" not in str(raised.value)


# --------------------------------------------------------------------------- good input

TOOLS = [read]
TEXTS = ("sent",)

#: (keywords, the field to look at, what it holds afterwards; ``SAME`` = the object given)
SAME: Any = object()
GOOD: list[tuple[dict[str, Any], str, Any]] = [
    ({}, "tools", ()),
    ({"tools": None}, "tools", ()),
    ({"images": None}, "images", ()),
    ({"messaging_tool_sent_texts": None}, "messaging_tool_sent_texts", ()),
    ({"tools": TOOLS}, "tools", SAME),  # a valid list is kept, not copied
    ({"tools": (read,)}, "tools", SAME),
    ({"tools": []}, "tools", SAME),
    ({"tools": UserList([read])}, "tools", SAME),  # any real Sequence
    ({"images": [IMAGE]}, "images", SAME),
    ({"messaging_tool_sent_texts": TEXTS}, "messaging_tool_sent_texts", SAME),
    ({"messaging_tool_sent_texts": [Text("x")]}, "messaging_tool_sent_texts", SAME),
    ({"fallbacks": None}, "fallbacks", None),  # the configured chain
    ({"fallbacks": []}, "fallbacks", SAME),  # no fallbacks
    ({"fallbacks": ("mock/main", "other")}, "fallbacks", SAME),
    ({"session_id": ""}, "session_id", ""),  # blank strings keep their meaning downstream
    ({"session_key": "  "}, "session_key", "  "),
    ({"model": ""}, "model", ""),
    ({"lane": ""}, "lane", ""),
    ({"run_id": ""}, "run_id", ""),
    ({"system_prompt": ""}, "system_prompt", ""),
    ({"session_id": Text("s1")}, "session_id", SAME),
    ({"trigger": ""}, "trigger", ""),  # normal priority, as before
    ({"trigger": "cron"}, "trigger", "cron"),
    ({"thinking_level": "xhigh"}, "thinking_level", "xhigh"),
    ({"thinking_level": None}, "thinking_level", None),
    ({"timeout_s": 0}, "timeout_s", 0),
    ({"timeout_s": 2.5}, "timeout_s", 2.5),
    ({"timeout_s": float("inf")}, "timeout_s", float("inf")),
    ({"idle_timeout_s": 1}, "idle_timeout_s", 1),
    ({"input_provenance": {"kind": "inter_session"}}, "input_provenance", SAME),
    ({"abort_signal": AbortController().signal}, "abort_signal", SAME),
    ({"block_streaming": False}, "block_streaming", False),
    ({"lock_auth_profile": True, "auth_profile": "mock:a"}, "lock_auth_profile", True),
]


@pytest.mark.parametrize(("given", "field", "expected"), GOOD, ids=case_id)
def test_good_input_constructs(given: dict[str, Any], field: str, expected: Any) -> None:
    request = RunRequest(prompt="hi", **given)
    if expected is SAME:
        assert getattr(request, field) is given[field]
    else:
        assert getattr(request, field) == expected


def test_a_generator_is_refused_before_it_is_read() -> None:
    consumed: list[str] = []

    def names() -> Iterator[str]:
        consumed.append("read")
        yield "mock/main"

    with pytest.raises(TypeError, match=re.escape("pass a list, e.g. list(...)")):
        RunRequest(prompt="hi", fallbacks=names())  # type: ignore[arg-type]
    assert consumed == []


# --------------------------------------------------------------------------- a real run


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with FaultInjectingOpenAIServer(models={"main": 64_000}, keys={"key-a": "ok"}) as running:
        yield running


def files_under(folder: Path) -> set[Path]:
    return {p for p in folder.rglob("*") if p.is_file()}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("given", "start"),
    [
        ({"tools": None, "messaging_tool_sent_texts": 5}, "RunRequest.messaging_tool_sent_texts"),
        ({"tools": [read, plain_function]}, "RunRequest.tools[1] must be an AgentTool"),
        ({"fallbacks": "mock/main"}, "RunRequest.fallbacks must be a list"),
        ({"session_id": 5}, "RunRequest.session_id must be a str"),
    ],
    ids=["texts", "tools", "fallbacks", "session_id"],
)
async def test_a_run_with_bad_input_raises_before_anything_runs(
    tmp_path: Path, server: FaultInjectingOpenAIServer, given: dict[str, Any], start: str
) -> None:
    state = tmp_path / "state"
    runtime = Runtime(
        mock_openai_config(state, server, timeout_seconds=20),
        load_entrypoints=False,
        on_load_failure="raise",
    )
    try:
        before = files_under(tmp_path)
        events: list[Event] = []
        options = {"session_id": "s1", **given}
        with pytest.raises(TypeError) as raised:
            await runtime.run("hi", on_event=events.append, **options)
        assert str(raised.value).startswith(start)
        with pytest.raises(TypeError, match=re.escape(start)):
            await runtime.run(request=RunRequest(prompt="hi", **options))
        assert events == []
        assert server.requests == []
        assert files_under(tmp_path) == before
        assert not (state / "sessions" / "s1.jsonl").exists()

        # the same runtime runs once the input is fixed; None means no tools
        server.enqueue(Reply(text="hello"))
        fixed = await runtime.run("hi", session_id="s1", tools=None, messaging_tool_sent_texts=None)
        assert fixed.ok, fixed.error
        assert fixed.text == "hello"
        assert (state / "sessions" / "s1.jsonl").exists()
    finally:
        await runtime.aclose()
