"""Reply payloads, reply directives, dedupe and usage accumulation (seed 004 四/六)."""

from __future__ import annotations

import pytest

from openclaw_runtime.messages import AssistantMessage, Cost, TextContent, ThinkingContent, Usage
from openclaw_runtime.runner.failure_signal import ToolErrorSummary
from openclaw_runtime.runner.messaging_dedupe import (
    filter_messaging_tool_duplicates,
    filter_messaging_tool_media_duplicates,
    is_messaging_tool_duplicate,
    normalize_text_for_comparison,
)
from openclaw_runtime.runner.payloads import (
    GENERIC_ASSISTANT_ERROR_TEXT,
    build_embedded_run_payloads,
    format_tool_aggregate,
    is_silent_reply_payload_text,
)
from openclaw_runtime.runner.reply_directives import parse_reply_directives
from openclaw_runtime.runner.reply_payload import (
    ReplyPayload,
    ToolMeta,
    is_cron_session_key,
    is_likely_mutating_tool_name,
)
from openclaw_runtime.runner.run_usage import UsageAccumulator


def assistant(*texts, stop="stop", error=None, thinking=None):
    blocks = []
    if thinking:
        blocks.append(ThinkingContent(thinking=thinking, thinking_signature="sig"))
    blocks += [TextContent(text=text) for text in texts]
    return AssistantMessage(content=blocks, stop_reason=stop, error_message=error)


def texts(payloads):
    return [payload.text for payload in payloads]


# --------------------------------------------------------------------------- directives


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("hello", {"text": "hello"}),
        ("[[reply_to_current]] hi", {"text": "hi", "reply_to_current": True, "reply_to_tag": True}),
        (
            "[[ REPLY_TO_CURRENT ]]\nhi",
            {"text": "hi", "reply_to_current": True, "reply_to_tag": True},
        ),
        ("[[reply_to: 123 ]] hi", {"text": "hi", "reply_to_id": "123", "reply_to_tag": True}),
        (
            "[[reply_to:1]] a [[reply_to:2]] b",
            {"text": "a b", "reply_to_id": "2", "reply_to_tag": True},
        ),
        ("abc[[reply_to_current]]", {"text": "abc[[reply_to_current]]"}),  # mid-word: not a tag
        ("[[audio_as_voice]] listen", {"text": "listen", "audio_as_voice": True}),
        ("[[silent]]", {"text": "", "is_silent": True}),
        ("thinking aloud [[SILENT]]", {"text": "", "is_silent": True}),
        ("NO_REPLY", {"text": "", "is_silent": True}),
        ("  NO_REPLY \n", {"text": "", "is_silent": True}),
        ('{"action": "NO_REPLY"}', {"text": "", "is_silent": True}),
        ("I'm done. NO_REPLY", {"text": "I'm done. NO_REPLY"}),  # only the bare token is silent
        (
            "Here\nMEDIA: https://cdn.example.com/a.png",
            {"text": "Here", "media_urls": ("https://cdn.example.com/a.png",)},
        ),
        ("MEDIA: `/tmp/out/chart.png`", {"text": "", "media_urls": ("/tmp/out/chart.png",)}),
        ("MEDIA: file:///tmp/x.png", {"text": "", "media_urls": ("/tmp/x.png",)}),
        ("MEDIA: http://cdn.example.com/a.png", {"text": "MEDIA: http://cdn.example.com/a.png"}),
        ("MEDIA: https://localhost/a.png", {"text": "MEDIA: https://localhost/a.png"}),
        (
            "MEDIA: https://user:pw@cdn.example.com/a.png",
            {"text": "MEDIA: https://user:pw@cdn.example.com/a.png"},
        ),
        ("MEDIA: ../../etc/passwd", {"text": "MEDIA: ../../etc/passwd"}),
        ("```\nMEDIA: /tmp/a.png\n```", {"text": "```\nMEDIA: /tmp/a.png\n```"}),
    ],
)
def test_parse_reply_directives(raw, expected):
    parsed = parse_reply_directives(raw)
    for name, value in expected.items():
        assert getattr(parsed, name) == value, name


def test_reply_to_current_uses_the_current_message_id():
    parsed = parse_reply_directives("[[reply_to_current]] ok", current_message_id=" m-1 ")
    assert parsed.reply_to_id == "m-1"
    explicit = parse_reply_directives(
        "[[reply_to_current]] [[reply_to:x]] ok", current_message_id="m-1"
    )
    assert explicit.reply_to_id == "x"


@pytest.mark.parametrize(
    ("text", "silent"),
    [
        ("NO_REPLY", True),
        ('{"action":"NO_REPLY"}', True),
        ('{"action":"NO_REPLY","x":1}', False),
        ("no_reply", False),
        ("", False),
        (None, False),
        ("NO_REPLY please", False),
    ],
)
def test_silent_payload_text(text, silent):
    assert is_silent_reply_payload_text(text) is silent


# --------------------------------------------------------------------------- the builder


def test_streamed_texts_become_payloads():
    payloads = build_embedded_run_payloads(assistant_texts=["First part.", "  ", "Second part."])
    assert texts(payloads) == ["First part.", "Second part."]


def test_final_assistant_message_wins_over_streamed_fragments():
    final = assistant("The final answer.")
    payloads = build_embedded_run_payloads(
        assistant_texts=["Let me check.", "The final answer."], current_assistant=final
    )
    assert texts(payloads) == ["The final answer."]


def test_single_streamed_text_ignores_the_session_last_assistant():
    payloads = build_embedded_run_payloads(
        assistant_texts=["Streamed."], last_assistant=assistant("older answer")
    )
    assert texts(payloads) == ["Streamed."]


def test_model_error_becomes_one_safe_error_payload():
    raw = '{"error":{"type":"invalid_request_error","message":"sk-secret-abc is invalid"}}'
    failed = assistant(stop="error", error=raw)
    payloads = build_embedded_run_payloads(
        assistant_texts=[raw, "The AI service returned an error. Please try again."],
        current_assistant=failed,
    )
    assert [p.to_dict() for p in payloads] == [
        {"text": GENERIC_ASSISTANT_ERROR_TEXT, "isError": True}
    ]
    assert "sk-secret" not in repr(payloads)


def test_error_formatter_is_injectable():
    payloads = build_embedded_run_payloads(
        assistant_texts=[],
        current_assistant=assistant(stop="error", error="429 rate limited"),
        format_assistant_error=lambda message: "⚠️ Rate limited, try again shortly.",
    )
    assert texts(payloads) == ["⚠️ Rate limited, try again shortly."]
    assert payloads[0].is_error


def test_aborted_turn_without_error_has_no_payload():
    aborted = assistant("partial", stop="aborted")
    assert build_embedded_run_payloads(assistant_texts=["partial"], current_assistant=aborted) == []
    assert build_embedded_run_payloads(assistant_texts=["partial", "more"], run_aborted=True) == []


@pytest.mark.parametrize(
    ("reasoning", "thinking", "aborted", "shown"),
    [
        ("on", None, False, True),
        ("on", "high", False, True),
        ("on", "off", False, False),
        ("off", None, False, False),
        (None, None, False, False),
        ("on", None, True, False),
    ],
)
def test_reasoning_payload(reasoning, thinking, aborted, shown):
    final = assistant("Answer.", thinking="  step one\nstep two  ")
    payloads = build_embedded_run_payloads(
        assistant_texts=["Answer."],
        current_assistant=final,
        reasoning_level=reasoning,
        thinking_level=thinking,
        run_aborted=aborted,
    )
    reasoning_payloads = [p for p in payloads if p.is_reasoning]
    assert bool(reasoning_payloads) is shown
    if shown:
        assert reasoning_payloads[0].text == "step one\nstep two"
        assert payloads[0].is_reasoning  # before the answer


def test_directives_reach_the_payload():
    payloads = build_embedded_run_payloads(
        assistant_texts=[
            "[[reply_to:msg-7]] [[audio_as_voice]] Here you go\nMEDIA: https://cdn.example.com/v.ogg"
        ]
    )
    assert [p.to_dict() for p in payloads] == [
        {
            "text": "Here you go",
            "mediaUrl": "https://cdn.example.com/v.ogg",
            "mediaUrls": ["https://cdn.example.com/v.ogg"],
            "replyToId": "msg-7",
            "replyToTag": True,
            "replyToCurrent": False,
            "audioAsVoice": True,
        }
    ]


@pytest.mark.parametrize("answer", ["NO_REPLY", '{"action": "NO_REPLY"}', "[[silent]]", "   "])
def test_silent_and_empty_answers_are_dropped(answer):
    assert build_embedded_run_payloads(assistant_texts=[answer]) == []


def test_silent_reply_with_media_keeps_the_media_only():
    payloads = build_embedded_run_payloads(assistant_texts=["NO_REPLY\nMEDIA: /tmp/chart.png"])
    assert [p.to_dict() for p in payloads] == [
        {
            "mediaUrl": "/tmp/chart.png",
            "mediaUrls": ["/tmp/chart.png"],
            "replyToTag": False,
            "replyToCurrent": False,
            "silent": True,
        }
    ]


def test_inline_tool_results_in_verbose_mode():
    metas = [ToolMeta("read", "/repo/src/a.py"), ToolMeta("exec", "ls -la")]
    payloads = build_embedded_run_payloads(
        assistant_texts=["Done."],
        tool_metas=metas,
        inline_tool_results_allowed=True,
        verbose_level="on",
    )
    assert texts(payloads) == ["🧩 Read: /repo/src/a.py", "🧩 ls -la", "Done."]
    quiet = build_embedded_run_payloads(
        assistant_texts=["Done."],
        tool_metas=metas,
        inline_tool_results_allowed=True,
        verbose_level="off",
    )
    assert texts(quiet) == ["Done."]


READ_FAIL = ToolErrorSummary("read", meta="/tmp/x", error="ENOENT: no such file")


@pytest.mark.parametrize(
    ("error", "answers", "kwargs", "warning"),
    [
        (READ_FAIL, [], {}, "⚠️ 🧩 Read: /tmp/x failed"),
        (READ_FAIL, ["Here is what I found."], {}, None),  # the user already got a reply
        (ToolErrorSummary("read", error="path is required"), [], {}, None),  # recoverable
        (
            READ_FAIL,
            [],
            {"verbose_level": "full"},
            "⚠️ 🧩 Read: /tmp/x failed: ENOENT: no such file",
        ),
        (READ_FAIL, [], {"suppress_tool_errors": True}, None),
        (READ_FAIL, [], {"suppress_tool_error_warnings": True}, None),
        (ToolErrorSummary("sessions_send", error="timeout"), [], {}, None),
        # mutating tools warn even next to a reply, unless the reply admits the failure
        (
            ToolErrorSummary("write", meta="/tmp/out.txt", error="EACCES"),
            ["All saved!"],
            {},
            "⚠️ 🧩 Write: /tmp/out.txt failed",
        ),
        (
            ToolErrorSummary("write", error="EACCES"),
            ["I couldn't write the file, permission denied."],
            {},
            None,
        ),
        (
            ToolErrorSummary("write", error="EACCES"),
            ["The write failed because of permissions."],
            {},
            None,
        ),
        (
            ToolErrorSummary("write", error="EACCES"),
            ["No errors, write did not fail."],
            {},
            "⚠️ 🧩 Write failed",
        ),
        (ToolErrorSummary("message", mutating_action=False, error="bad"), ["ok then"], {}, None),
        # exec errors only surface with details
        (
            ToolErrorSummary("exec", meta="make", error="exit 2", mutating_action=False),
            [],
            {},
            None,
        ),
        (
            ToolErrorSummary(
                "exec", meta="make", error="killed", timed_out=True, mutating_action=False
            ),
            [],
            {"is_cron_trigger": True},
            "⚠️ 🧩 make failed: killed",
        ),
        (
            ToolErrorSummary(
                "exec", meta="make", error="killed", timed_out=True, mutating_action=False
            ),
            [],
            {"session_key": "agent:main:cron:nightly"},
            "⚠️ 🧩 make failed: killed",
        ),
    ],
)
def test_tool_error_warning_policy(error, answers, kwargs, warning):
    payloads = build_embedded_run_payloads(assistant_texts=answers, last_tool_error=error, **kwargs)
    warnings = [p.text for p in payloads if p.is_error]
    assert warnings == ([warning] if warning else [])


def test_dynamic_warning_suppression():
    payloads = build_embedded_run_payloads(
        assistant_texts=[], last_tool_error=READ_FAIL, suppress_tool_error_warnings=lambda: True
    )
    assert payloads == []


def test_middleware_warning_next_to_a_reply_is_non_terminal():
    payloads = build_embedded_run_payloads(
        assistant_texts=["Sent."],
        last_tool_error=ToolErrorSummary("write", error="hook failed", middleware_error=True),
    )
    assert payloads[-1].non_terminal_tool_error_warning
    assert payloads[-1].to_dict()["nonTerminalToolErrorWarning"] is True


def test_approval_prompt_suppresses_assistant_artifacts():
    payloads = build_embedded_run_payloads(
        assistant_texts=["Please approve"],
        current_assistant=assistant("Please approve", stop="error", error="x"),
        did_send_deterministic_approval_prompt=True,
    )
    assert payloads == []


def test_text_already_sent_by_a_messaging_tool_is_not_repeated():
    payloads = build_embedded_run_payloads(
        assistant_texts=["Deployment finished successfully!", "Anything else I can do?"],
        messaging_tool_sent_texts=["deployment finished successfully"],
    )
    assert texts(payloads) == ["Anything else I can do?"]


def test_media_already_sent_is_removed():
    payloads = build_embedded_run_payloads(
        assistant_texts=["Chart attached\nMEDIA: /tmp/chart.png"],
        messaging_tool_sent_media_urls=["file:///tmp/chart.png"],
    )
    assert [(p.text, p.media_urls) for p in payloads] == [("Chart attached", ())]


# --------------------------------------------------------------------------- dedupe


@pytest.mark.parametrize(
    ("text", "sent", "duplicate"),
    [
        ("Hello, this is a test message!", ["Hello, this is a test message!"], True),
        ("HELLO, THIS IS A TEST MESSAGE!", ["hello, this is a test message!"], True),
        ("Hello! 👋 This is a test message", ["Hello! This is a test message"], True),
        ("short", ["short"], False),  # under 10 characters
        ("deployment finished.", ["deployment finished"], True),  # tail adds nothing
        ("deployment finished? 🎉", ["deployment finished"], True),
        ("deployment finished. Actually it failed.", ["deployment finished"], False),  # correction
        ("Sent: deployment finished", ["deployment finished"], True),  # re-narration, sent ≥ half
        ("I sent the message: deployment finished", ["deployment finished"], False),  # < half
        ("As requested I have now sent over the note: build ok!!", ["build ok!!"], False),
        ("the build is green", ["the build is green, tests pass"], True),  # ≥ half of sent
        ("the build is green", ["the build is green and all tests pass"], False),
        ("the build", ["the build is green and all tests pass today"], False),
        ("anything at all here", [], False),
        ("anything at all here", ["   "], False),
    ],
)
def test_messaging_tool_duplicate(text, sent, duplicate):
    assert is_messaging_tool_duplicate(text, sent) is duplicate


def test_normalize_text_for_comparison():
    assert normalize_text_for_comparison("  Hello 👋   WORLD  🌍  ") == "hello world"
    assert normalize_text_for_comparison("Ünïcode\tTEXT") == "ünïcode text"


def test_duplicate_filters_keep_media_payloads():
    payloads = [
        ReplyPayload(text="deployment finished"),
        ReplyPayload(text="deployment finished", media_urls=("/tmp/log.txt",)),
    ]
    kept = filter_messaging_tool_duplicates(payloads, ["deployment finished"])
    assert kept == [payloads[1]]
    media_only = filter_messaging_tool_media_duplicates(
        [ReplyPayload(media_urls=("/tmp/a.png",))], ["/tmp/a.png"]
    )
    assert media_only == []


# --------------------------------------------------------------------------- small helpers


@pytest.mark.parametrize(
    ("name", "metas", "markdown", "expected"),
    [
        ("read", None, False, "🧩 Read"),
        ("read", ["/repo/src/a.py", "/repo/src/b.py"], False, "🧩 Read: /repo/src/{a.py, b.py}"),
        ("web_search", ["openclaw docs"], False, "🧩 Web Search: openclaw docs"),
        ("edit", ["/a/x.py", "/b/y.py"], True, "🧩 Edit: `/a/x.py; /b/y.py`"),
        ("bash", ["git status"], False, "🧩 git status"),
        ("apply_patch", ["a → b"], False, "🧩 Apply Patch: a → b"),
    ],
)
def test_format_tool_aggregate(name, metas, markdown, expected):
    assert format_tool_aggregate(name, metas, markdown=markdown) == expected


def test_format_tool_aggregate_custom_display():
    assert (
        format_tool_aggregate("read", ["/x"], resolve_display=lambda name: ("📖", "Read file"))
        == "📖 Read file: /x"
    )


@pytest.mark.parametrize(
    ("name", "mutating"),
    [
        ("write", True),
        ("EDIT", True),
        ("exec", True),
        ("slack_send", True),
        ("message_reply", True),
        ("github_actions", True),
        ("read", False),
        ("web_search", False),
        ("", False),
        (None, False),
    ],
)
def test_mutating_tool_names(name, mutating):
    assert is_likely_mutating_tool_name(name) is mutating


@pytest.mark.parametrize(
    ("key", "cron"),
    [
        ("cron:nightly", True),
        ("agent:main:cron:nightly", True),
        ("AGENT:main:CRON:x:run:1", True),
        ("agent:main:main", False),
        ("agent:cron", False),
        ("", False),
        (None, False),
    ],
)
def test_cron_session_key(key, cron):
    assert is_cron_session_key(key) is cron


# --------------------------------------------------------------------------- usage


def test_usage_accumulates_over_every_call():
    acc = UsageAccumulator()
    acc.add(
        Usage(
            input=100, output=20, cache_read=50, total_tokens=170, cost=Cost(input=0.1, total=0.1)
        )
    )
    acc.add(
        {
            "input": 10,
            "output": 5,
            "cacheWrite": 7,
            "total": 22,
            "cost": {"output": 0.02, "total": 0.02},
        }
    )
    acc.add_message(AssistantMessage(usage=Usage(input=1, output=1)))  # no total: summed
    acc.add(None)
    assert (acc.input, acc.output, acc.cache_read, acc.cache_write) == (111, 26, 50, 7)
    assert acc.total_tokens == 170 + 22 + 2
    assert acc.calls == 3
    assert acc.cost.total == pytest.approx(0.12)
    assert acc.cost.input == pytest.approx(0.1)
    assert acc.last_call == Usage(input=1, output=1)
    usage = acc.to_usage()
    assert usage.to_dict()["cacheWrite"] == 7
    assert usage.total_tokens == 194


def test_usage_rejects_garbage():
    with pytest.raises(TypeError, match="usage must be"):
        UsageAccumulator().add(42)  # type: ignore[arg-type]
