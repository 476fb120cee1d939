"""The run's end reads wire dicts, and ``RunResult.messages`` is parsed when first read.

``run_models.run_facts_of`` must answer what ``collect_attempt_facts`` answers over the
parsed messages (random runs of every message shape the runtime writes, and shapes it does
not, which go to the models); ``RunResult.messages`` made on first read must be the list
the eager path made (same values, types and field sets; the same list object on every later
read; never the session's objects), and a deferred ``RunResult`` must compare, print, copy,
pickle, ``asdict`` and ``replace`` as one built with the list in hand. The success payloads
leave ``last_assistant`` out when a current assistant is given: the builder reads it only
without one.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.messages import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from openclaw_runtime.runner import run_models
from openclaw_runtime.runner import run_result as run_result_module
from openclaw_runtime.runner.attempt import collect_attempt_facts
from openclaw_runtime.runner.outcome import build_agent_run_terminal_outcome
from openclaw_runtime.runner.payloads import build_embedded_run_payloads
from openclaw_runtime.runner.request import RunResult, defer_messages
from openclaw_runtime.runner.run_models import (
    RunEntryModels,
    deferred_messages,
    messages_of,
    run_facts_of,
)
from openclaw_runtime.testing.openai_server import FaultInjectingOpenAIServer, Reply
from openclaw_runtime.transcript.append import wire_message
from openclaw_runtime.transcript.session_context import entry_message
from tests.run_support import mock_openai_config, mock_openai_server, read

pytestmark = pytest.mark.anyio

_TEXTS = ["", " ", "hello", "  padded  ", "NO_REPLY", "x" * 2_500, "line\nbreak", "⚠️ ü"]


def _blocks(rng: random.Random, *, tool_result: bool = False) -> list[Any]:
    out: list[Any] = []
    for _ in range(rng.randint(0, 4)):
        kind = rng.choice(["text", "text", "thinking", "call", "image"])
        if kind == "text":
            out.append(TextContent(text=rng.choice(_TEXTS)))
        elif kind == "thinking" and not tool_result:
            out.append(ThinkingContent(thinking=rng.choice(_TEXTS)))
        elif kind == "call" and not tool_result:
            out.append(ToolCall(id=f"c{rng.randint(0, 9)}", name="read", arguments={"p": 1}))
        else:
            out.append(ImageContent(data="aGk=", mime_type="image/png"))
    return out


def _random_message(rng: random.Random) -> Any:
    role = rng.choice(["user", "assistant", "assistant", "toolResult", "toolResult"])
    if role == "user":
        return UserMessage(content=rng.choice(_TEXTS) or "hi")
    if role == "assistant":
        return AssistantMessage(
            api="fake",
            provider="fake",
            model="m",
            content=_blocks(rng),
            stop_reason=rng.choice(["stop", "length", "toolUse", "error", "aborted"]),
            error_message=rng.choice([None, "boom"]),
            usage=Usage(output=rng.choice([0, 3])),
        )
    return ToolResultMessage(
        tool_call_id=f"c{rng.randint(0, 9)}",
        tool_name=rng.choice(["read", "write", "exec", ""]),
        content=_blocks(rng, tool_result=True),
        is_error=rng.random() < 0.4,
    )


def _entry(rng: random.Random, n: int) -> dict[str, Any]:
    """A ``message`` entry as the store writes it, sometimes another kind of entry, or a
    message in a shape the runtime does not write."""
    roll = rng.random()
    if roll < 0.05:
        return {"type": "custom_message", "id": f"e{n}", "customType": "x", "content": "c"}
    if roll < 0.08:
        return {"type": "label", "id": f"e{n}", "label": "l"}
    message = wire_message(_random_message(rng))
    roll = rng.random()
    if roll < 0.05:
        message["excludeFromContext"] = True
    elif roll < 0.08 and message["role"] == "toolResult":
        message["tool_name"] = message.pop("toolName")  # snake_case: validates by name too
    elif roll < 0.09 and message["role"] == "assistant":
        message.pop("stopReason", None)
        message["stop_reason"] = "error"  # by name, with no alias: the model reads it
    elif roll < 0.095 and message["role"] == "toolResult":
        message.pop("isError", None)
        message["is_error"] = True
    elif roll < 0.10 and message["role"] == "toolResult":
        message["isError"] = "true"  # coerced by the model, not an exact bool
    elif roll < 0.12 and message["role"] == "assistant":
        message["stopReason"] = "weird"  # does not validate: an opaque message
    elif roll < 0.14 and message.get("content"):
        message["content"] = [{"type": "text", "text": 5}]  # does not validate
    elif roll < 0.16:
        message.pop("content", None)  # the default (an empty list)
    elif roll < 0.18 and message["role"] == "assistant":
        message.pop("stopReason", None)  # the default ("stop")
    return {"type": "message", "id": f"e{n}", "message": message}


def _same_facts(entries: list[dict[str, Any]]) -> None:
    expected = collect_attempt_facts(messages_of(entries, entry_message))
    facts = run_facts_of(entries, RunEntryModels())
    assert facts.assistant_texts == expected.assistant_texts
    assert facts.tool_metas == expected.tool_metas
    assert facts.last_tool_error == expected.last_tool_error
    assert facts.assistant == expected.assistant
    assert type(facts.assistant) is type(expected.assistant)


@pytest.mark.parametrize("seed", range(40))
def test_wire_facts_equal_the_models_facts_on_random_runs(seed: int) -> None:
    rng = random.Random(seed)
    entries = [_entry(rng, n) for n in range(rng.randint(0, 40))]
    _same_facts(entries)
    for cut in range(0, len(entries), 7):
        _same_facts(entries[:cut])


def test_wire_facts_table() -> None:
    def entry(message: Any, n: int = 0) -> dict[str, Any]:
        return {"type": "message", "id": f"t{n}", "message": wire_message(message)}

    answer = AssistantMessage(content=[TextContent(text="done")])
    failed = ToolResultMessage(
        tool_call_id="c", tool_name="write", content=[TextContent(text=" no ")], is_error=True
    )
    errored = AssistantMessage(content=[TextContent(text="x")], stop_reason="error")
    cases = [
        [],
        [entry(answer)],
        [entry(failed), entry(answer, 1)],
        [entry(answer), entry(errored, 1)],  # the last assistant is the failed one
        [entry(answer), {"type": "label", "id": "l"}],
    ]
    for entries in cases:
        _same_facts(entries)
    facts = run_facts_of(cases[2], RunEntryModels())
    assert facts.last_tool_error is not None and facts.last_tool_error.error == "no"
    assert facts.assistant_texts == ("done",)


def test_the_last_assistant_is_parsed_only_when_asked_for(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[Any] = []

    def counting(entry: Any, **options: Any) -> Any:
        calls.append(entry)
        return entry_message(entry, **options)

    monkeypatch.setattr(run_models, "entry_message", counting)
    entries = [
        {"type": "message", "id": f"a{n}", "message": wire_message(AssistantMessage())}
        for n in range(3)
    ]
    facts = run_facts_of(entries, RunEntryModels())
    assert calls == []
    assert facts.assistant == AssistantMessage.model_validate(entries[-1]["message"])
    assert facts.assistant is facts.assistant and calls == [entries[-1]]


# ----------------------------------------------------------- the deferred RunResult.messages


def _result(messages: list[Any]) -> RunResult:
    outcome = build_agent_run_terminal_outcome("ok", started_at=1.0, ended_at=2.0)
    return RunResult(
        run_id="r", session_id="s", session_key=None, session_file=None, outcome=outcome,
        messages=messages, duration_ms=1.5,
    )  # fmt: skip


def _deferred(entries: list[dict[str, Any]]) -> RunResult:
    return defer_messages(_result([]), deferred_messages(entries))


def _sample_entries() -> list[dict[str, Any]]:
    rng = random.Random(7)
    return [
        {"type": "message", "id": f"e{n}", "message": wire_message(_random_message(rng))}
        for n in range(12)
    ]


def test_a_deferred_result_is_the_eager_one() -> None:
    entries = _sample_entries()
    eager = _result(messages_of(entries, entry_message))
    checks: list[Any] = [
        lambda r: r == eager,
        lambda r: repr(r) == repr(eager),
        lambda r: dataclasses.asdict(r) == dataclasses.asdict(eager),
        lambda r: dataclasses.replace(r).messages == eager.messages,
        lambda r: copy.copy(r).messages is r.messages,
        lambda r: copy.deepcopy(r) == eager,
        lambda r: pickle.loads(pickle.dumps(r)) == eager,
        lambda r: r.to_dict() == eager.to_dict(),
        lambda r: [type(m) for m in r.messages] == [type(m) for m in eager.messages],
        lambda r: (
            [m.model_fields_set for m in r.messages] == [m.model_fields_set for m in eager.messages]
        ),
    ]
    for check in checks:
        assert check(_deferred(entries))  # each on a result whose list is not made yet
    assert [f.name for f in dataclasses.fields(RunResult)] == [
        f.name for f in dataclasses.fields(eager)
    ]


def test_a_deferred_list_is_made_once_and_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []

    def counting(entry: Any, **options: Any) -> Any:
        calls.append(entry)
        return entry_message(entry, **options)

    monkeypatch.setattr(run_models, "entry_message", counting)
    entries = _sample_entries()
    result = _deferred(entries)
    assert calls == []
    first = result.messages
    assert result.messages is first and len(calls) == len(entries)
    first.append("mine")  # the caller's list: later reads see the caller's edits
    assert result.messages[-1] == "mine" and len(calls) == len(entries)
    replaced = _deferred(entries)
    replaced.messages = ["set"]  # a plain assignment wins over the deferred list
    assert replaced.messages == ["set"] and len(calls) == len(entries)
    assert _result(["plain"]).messages == ["plain"]  # built the ordinary way


# ------------------------------------------------------------------ the payloads' shortcut


def test_payloads_ignore_the_last_assistant_when_a_current_one_is_given() -> None:
    rng = random.Random(3)
    for _ in range(200):
        current = _random_message(rng)
        last = _random_message(rng)
        if not isinstance(current, AssistantMessage):
            continue
        texts = [rng.choice(_TEXTS) for _ in range(rng.randint(0, 2))]
        base = {"assistant_texts": texts, "current_assistant": current}
        with_last = build_embedded_run_payloads(
            **base, last_assistant=last if isinstance(last, AssistantMessage) else None
        )
        assert build_embedded_run_payloads(**base, last_assistant=None) == with_last


# ------------------------------------------------------------------------- a real tool loop


@pytest.fixture
def server() -> Iterator[FaultInjectingOpenAIServer]:
    with mock_openai_server() as running:
        yield running


@pytest.mark.parametrize("memory", [True, False], ids=["memory", "durable"])
async def test_a_real_runs_result_equals_the_eager_path(
    tmp_path: Path,
    server: FaultInjectingOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
    memory: bool,
) -> None:
    """A tool loop, then a second run on the same session before the first result's
    messages are read: they are the messages the eager path made at the first run's end,
    and the session's own models are not among them."""
    eager: list[list[Any]] = []
    facts: list[Any] = []
    real_defer = run_result_module.defer_messages

    def recording(result: RunResult, make: Any) -> RunResult:
        eager.append(make())  # what the eager path put on the result at this moment
        return real_defer(result, make)

    real_payloads = run_result_module._build_success_payloads

    def payloads(run: Any, result: Any, sent: Any) -> Any:
        facts.append((run.run_facts(), collect_attempt_facts(run._read_run_messages())))
        return real_payloads(run, result, sent)

    monkeypatch.setattr(run_result_module, "defer_messages", recording)
    monkeypatch.setattr(run_result_module, "_build_success_payloads", payloads)
    runtime = Runtime(
        mock_openai_config(tmp_path / "state", server), load_entrypoints=False, memory=memory
    )
    for n in range(3):
        server.enqueue(Reply(tool_calls=[("read", {"path": f"f{n}.txt"})]))
    server.enqueue(Reply(text="all read"))
    server.enqueue(Reply(text="again"))
    try:
        first = await runtime.run("read them", session_id="lazy", tools=[read])
        second = await runtime.run("once more", session_id="lazy", tools=[read])
        session = await runtime.checkout_session("lazy", cwd=str(tmp_path))
        try:
            history = list(session.build_session_context().messages)
        finally:
            await runtime.checkin_session(session)
    finally:
        await runtime.aclose()
    assert first.ok and first.text == "all read" and second.text == "again"
    for result, made in zip((first, second), eager, strict=True):
        assert result.messages == made and result.messages is result.messages
        assert [type(m) for m in result.messages] == [type(m) for m in made]
        kept = {id(m) for m in history}
        assert not any(id(m) in kept for m in result.messages)
    assert [m.role for m in first.messages] == ["user"] + ["assistant", "toolResult"] * 3 + [
        "assistant"
    ]
    assert first.messages + second.messages == history
    for new, old in facts:
        assert new.assistant == old.assistant and new.tool_metas == old.tool_metas
        assert new.assistant_texts == old.assistant_texts
        assert new.last_tool_error == old.last_tool_error
