"""The runtime's summarization compaction over a real session file."""

from __future__ import annotations

import pytest

from openclaw_runtime.context.compaction import (
    SummaryModel,
    build_summary_prompt,
    compact_session_direct,
    find_compaction_cut,
    serialize_conversation,
)
from openclaw_runtime.messages import (
    AssistantMessage,
    CompactionSummaryMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openclaw_runtime.testing import FakeProvider, fake_model
from openclaw_runtime.transcript import JsonlSessionStore

pytestmark = pytest.mark.anyio


def turn(n, *, tool=True, size=200):
    messages = [UserMessage(content=f"question {n} " + "x" * size, timestamp=n * 1000)]
    if tool:
        messages.append(
            AssistantMessage(
                content=[ToolCall(id=f"c{n}", name="read", arguments={"n": n})],
                stop_reason="toolUse",
                timestamp=n * 1000 + 1,
            )
        )
        messages.append(
            ToolResultMessage(
                tool_call_id=f"c{n}",
                tool_name="read",
                content=[TextContent(text="r" * size)],
                timestamp=n * 1000 + 2,
            )
        )
    messages.append(
        AssistantMessage(content=[TextContent(text=f"answer {n}")], timestamp=n * 1000 + 3)
    )
    return messages


def count(items):
    return len(items)


@pytest.mark.parametrize(
    ("messages", "keep", "expected"),
    [
        ([], 10, None),
        (turn(1, tool=False), 1, 1),  # [user, answer]: keep the answer, summarize the question
        # turn(1) + turn(2) = [u1, call1, result1, answer1, u2, call2, result2, answer2]
        (turn(1) + turn(2), 1, 7),  # the last answer alone satisfies the budget
        (turn(1) + turn(2), 2, 5),  # result2 (6) is never a cut: back to call2, kept with it
        (turn(1) + turn(2), 3, 5),
        (turn(1) + turn(2), 4, 4),
        (turn(1) + turn(2), 100, None),  # keeping everything leaves nothing to summarize
    ],
)
def test_cut_never_separates_a_tool_call_from_its_result(messages, keep, expected):
    cut = find_compaction_cut(messages, keep_recent_tokens=keep, estimate=count)
    assert (cut.index if cut else None) == expected
    if cut:
        assert not isinstance(messages[cut.index], ToolResultMessage)


def test_serialize_and_prompt():
    history = turn(1)
    history[2] = ToolResultMessage(
        tool_call_id="c1", tool_name="read", content=[TextContent(text="y" * 5000)], is_error=True
    )
    text = serialize_conversation(history)
    assert text.splitlines()[1] == '[Assistant tool call]: read({"n": 1})'
    assert "[Tool result read (error)]: " + "y" * 2000 + " ... [3000 more characters]" in text
    prompt = build_summary_prompt(
        history, previous_summary="earlier", custom_instructions="focus on files"
    )
    assert prompt.startswith("Here is the summary of the conversation so far.")
    assert "<summary>\nearlier\n</summary>" in prompt
    assert prompt.endswith(
        "Additional instructions for this summary: focus on files\n\nWrite the summary now."
    )


async def make_session(tmp_path, messages):
    store = JsonlSessionStore(tmp_path / "sessions")
    session = await store.create("s1", cwd=str(tmp_path))
    for message in messages:
        await session.append_message(message)
    return session


async def test_compaction_writes_a_summary_entry_and_keeps_the_tail(tmp_path):
    history = []
    for n in range(1, 9):
        history += turn(n, size=2000)
    history.insert(4, UserMessage(content="question 1 " + "x" * 2000, timestamp=1500))  # a resend
    session = await make_session(tmp_path, history)
    summarizer = FakeProvider()
    summarizer.reply("SUMMARY: eight questions about files")
    result = await compact_session_direct(
        session,
        [SummaryModel(fake_model(), summarizer.stream_fn)],
        keep_recent_tokens=3000,
        force=True,
    )
    assert result.ok and result.compacted
    assert result.result.summary == "SUMMARY: eight questions about files"
    assert result.result.tokens_after < result.result.tokens_before

    context = session.build_session_context().messages
    assert isinstance(context[0], CompactionSummaryMessage)
    assert context[0].summary == "SUMMARY: eight questions about files"
    assert isinstance(context[1], UserMessage | AssistantMessage)
    kept_texts = [m.text() for m in context[1:] if isinstance(m, UserMessage)]
    assert kept_texts and all(
        t.startswith("question 8") or t.startswith("question 7") for t in kept_texts
    )

    (entry,) = session.find_entries("compaction")
    assert entry["firstKeptEntryId"] == result.result.first_kept_entry_id
    assert entry["tokensBefore"] == result.result.tokens_before
    assert entry["details"]["tokensAfter"] == result.result.tokens_after

    sent = summarizer.history[0].context.messages[0].text()
    assert sent.count("[User]: question 1 ") == 1  # the duplicate resend was deduped
    assert "question 8" not in sent  # kept messages are not summarized

    reopened = await JsonlSessionStore(tmp_path / "sessions").open("s1")
    assert isinstance(reopened.build_session_context().messages[0], CompactionSummaryMessage)


async def test_a_second_compaction_updates_the_first_summary(tmp_path):
    history = []
    for n in range(1, 7):
        history += turn(n, size=2000)
    session = await make_session(tmp_path, history)
    summarizer = FakeProvider()
    summarizer.reply("FIRST SUMMARY")
    summarizer.reply("SECOND SUMMARY")
    model = [SummaryModel(fake_model(), summarizer.stream_fn)]
    await compact_session_direct(session, model, keep_recent_tokens=4000, force=True)
    for n in range(7, 10):
        for message in turn(n, size=2000):
            await session.append_message(message)
    second = await compact_session_direct(session, model, keep_recent_tokens=4000, force=True)
    assert second.compacted
    prompt = summarizer.history[1].context.messages[0].text()
    assert "<summary>\nFIRST SUMMARY\n</summary>" in prompt
    assert session.build_session_context().messages[0].summary == "SECOND SUMMARY"


async def test_summarization_falls_back_and_reports_failures(tmp_path):
    history = []
    for n in range(1, 6):
        history += turn(n, size=2000)
    session = await make_session(tmp_path, history)
    broken, working = FakeProvider(), FakeProvider()
    broken.fail("529 overloaded", status=529)
    working.reply("FROM THE FALLBACK")
    models = [
        SummaryModel(fake_model(id="primary"), broken.stream_fn),
        SummaryModel(fake_model(id="backup"), working.stream_fn),
    ]
    result = await compact_session_direct(session, models, keep_recent_tokens=3000, force=True)
    assert result.result.summary == "FROM THE FALLBACK"
    assert result.result.details["model"] == "fake/backup"

    broken.fail("529 overloaded", status=529)
    empty = FakeProvider()
    empty.reply("")
    failed = await compact_session_direct(
        session,
        [
            SummaryModel(fake_model(id="primary"), broken.stream_fn),
            SummaryModel(fake_model(id="empty"), empty.stream_fn),
        ],
        keep_recent_tokens=10,
        force=True,
    )
    assert (failed.ok, failed.compacted) == (False, False)
    assert failed.reason == (
        "summarization failed: fake/primary: 529 overloaded; fake/empty: the summarization model returned no text"
    )
    assert len(session.find_entries("compaction")) == 1  # a failed compaction writes nothing


async def test_no_compaction_when_the_context_fits(tmp_path):
    session = await make_session(tmp_path, turn(1) + turn(2))
    summarizer = FakeProvider()
    result = await compact_session_direct(
        session, [SummaryModel(fake_model(), summarizer.stream_fn)], token_budget=100_000
    )
    assert (result.ok, result.compacted, result.reason) == (True, False, "context fits the budget")
    assert summarizer.history == []
