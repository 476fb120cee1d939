"""Duplicate user messages before compaction (openclaw-spec §5, seed 000 §6.4)."""

from __future__ import annotations

import math

import pytest

from openclaw_runtime.context.dedupe import (
    DEFAULT_DUPLICATE_USER_MESSAGE_WINDOW_MS,
    MIN_DUPLICATE_USER_MESSAGE_CHARS,
    dedupe_duplicate_user_messages_for_compaction,
)
from openclaw_runtime.messages import AssistantMessage, TextContent, UserMessage, load_message

LONG = "please run the deployment status check for production"


def user(timestamp, *, content=LONG, sender_id=None, metadata=None) -> UserMessage:
    if metadata is None and sender_id is not None:
        metadata = {"senderId": sender_id}
    extra = {"__openclaw": metadata} if metadata is not None else {}
    return UserMessage(content=content, timestamp=timestamp, **extra)


def kept_indexes(messages, **options) -> list[int]:
    result = dedupe_duplicate_user_messages_for_compaction(messages, **options)
    positions = {id(m): i for i, m in enumerate(messages)}
    return [positions[id(m)] for m in result]


def test_constants():
    assert DEFAULT_DUPLICATE_USER_MESSAGE_WINDOW_MS == 60_000
    assert MIN_DUPLICATE_USER_MESSAGE_CHARS == 24


def test_whitespace_variants_inside_the_window_are_dropped():
    first = user(1_000)
    second = user(2_000, content="  please   run the deployment\tstatus check for production \n")
    reply = AssistantMessage(content=[TextContent(text="checking")], timestamp=3_000)
    assert dedupe_duplicate_user_messages_for_compaction([first, second, reply]) == [first, reply]


@pytest.mark.parametrize(
    ("name", "messages", "kept"),
    [
        (
            "short acknowledgements",
            [user(1_000, content="next"), user(2_000, content="next")],
            [0, 1],
        ),
        (
            "23 chars is too short",
            [user(1_000, content="x" * 23), user(2_000, content="x" * 23)],
            [0, 1],
        ),
        ("24 chars is enough", [user(1_000, content="x" * 24), user(2_000, content="x" * 24)], [0]),
        # the minimum is measured like JavaScript's length: an emoji counts two
        (
            "12 emoji are 24 UTF-16 units",
            [user(1, content="😀" * 12), user(2, content="😀" * 12)],
            [0],
        ),
        ("distant repeats", [user(1_000), user(70_000)], [0, 1]),
        ("actual retries", [user(1_000), user(2_000)], [0]),
        (
            "case-sensitive corrections",
            [
                user(1_000, content="set deployment token to SecretValueForProduction"),
                user(2_000, content="set deployment token to secretvalueforproduction"),
            ],
            [0, 1],
        ),
        (
            "Unicode-equivalent text (NFC)",
            [
                user(1_000, content="please deploy the café service to production now"),
                user(2_000, content="please deploy the cafe\u0301 service to production now"),
            ],
            [0],
        ),
        (
            "text blocks and a string are the same text",
            [user(1_000, content=[TextContent(text=LONG)]), user(2_000, content=f" {LONG} ")],
            [0],
        ),
        (
            "blocks are joined with a newline, then whitespace collapses",
            [
                user(
                    1_000,
                    content=[
                        TextContent(text="please run the deployment"),
                        TextContent(text="status check"),
                    ],
                ),
                user(2_000, content="please run the deployment status check"),
            ],
            [0],
        ),
        (
            "no-break spaces collapse like spaces",
            [user(1_000), user(2_000, content=LONG.replace(" ", "\u00a0"))],
            [0],
        ),
    ],
)
def test_which_repeats_count(name, messages, kept):
    assert kept_indexes(messages) == kept


@pytest.mark.parametrize(
    ("first", "second", "keep_second"),
    [
        ({"senderId": "user-alice"}, {"senderId": "user-bob"}, True),
        ({"senderId": "user-alice"}, {"senderId": "user-alice"}, False),
        ({"senderUsername": "Alice"}, {"senderUsername": "Bob"}, True),
        ({"senderName": "Alice"}, {"senderName": "Bob"}, True),
        ({"senderUsername": " Alice "}, {"senderUsername": "Alice"}, False),  # trimmed
        (
            {"senderId": " stable-sender ", "senderUsername": "before", "senderName": "Before"},
            {"senderId": "stable-sender", "senderUsername": "after", "senderName": "After"},
            False,  # the id wins over renamed display fields
        ),
        (
            {"senderId": "  ", "senderUsername": "alice"},
            {"senderId": "", "senderUsername": "bob"},
            True,
        ),
        ({"senderId": "alice"}, {"senderUsername": "alice"}, True),  # same value, other source
        ({"senderUsername": "alice"}, {"senderName": "alice"}, True),
        ({}, {}, False),
        ({"senderId": 42}, {}, False),  # a non-string id is no identity
    ],
)
def test_retries_are_keyed_by_canonical_sender_identity(first, second, keep_second):
    original = user(1_000, metadata=first)
    candidate = user(2_000, metadata=second)
    expected = [original, candidate] if keep_second else [original]
    assert dedupe_duplicate_user_messages_for_compaction([original, candidate]) == expected


def test_interleaved_senders():
    alice, bob, alice_retry = (
        user(1_000, sender_id="a"),
        user(2_000, sender_id="b"),
        user(3_000, sender_id="a"),
    )
    assert dedupe_duplicate_user_messages_for_compaction([alice, bob, alice_retry]) == [alice, bob]


def test_sender_and_text_do_not_collide_on_a_delimiter():
    first = user(1_000, content="b|please run deployment status now", sender_id="a")
    second = user(2_000, content="please run deployment status now", sender_id="a|b")
    assert kept_indexes([first, second]) == [0, 1]


@pytest.mark.parametrize(
    ("name", "timestamps", "kept"),
    [
        ("primary retries", [90_000, 1_000, 91_000], [0, 1]),
        ("backdated retries", [90_000, 1_000, 2_000], [0, 1]),
        ("retries after a distant forward jump", [1_000, 90_000, 2_000], [0, 1]),
        ("seeded interleaved retry streams", [1_000, 90_000, 2_000, 91_000, 3_000], [0, 1]),
        ("seed preserved across repeated jumps", [1_000, 90_000, 200_000, 2_000], [0, 1, 2]),
        ("active late timeline preserved", [90_000, 1_000, 200_000, 2_000], [0, 1, 2]),
        ("window-edge primary retries", [1_000, 61_000, 2_000], [0]),
        ("sliding primary retries", [1_000, 2_000, 61_000, 3_000], [0]),
        ("previous-bucket latest timestamp", [0, 59_000, 61_000], [0]),
        ("current-bucket earliest timestamp", [59_000, 1_000, 2_000], [0, 1]),
        ("inclusive window boundary", [0, 60_000], [0]),
        ("just outside the window", [0, 60_001], [0, 1]),
        ("negative epoch timestamps", [-1_000, -120_000, -119_000], [0, 1]),
        (
            "three interleaved timelines",
            [1_000, 90_000, 200_000, 2_000, 91_000, 201_000],
            [0, 1, 2],
        ),
        ("interleaved retry streams", [90_000, 1_000, 91_000, 2_000, 92_000, 3_000], [0, 1]),
        ("restarted backdated streams", [90_000, 20_000, 1_000, 2_000], [0, 1, 2]),
        ("same timestamp", [5_000, 5_000], [0]),
    ],
)
def test_bucket_watermarks(name, timestamps, kept):
    assert kept_indexes([user(t) for t in timestamps]) == kept


@pytest.mark.parametrize(
    ("name", "window", "timestamps", "kept"),
    [
        ("zero window matches exact timestamps only", 0, [1_000, 1_000, 2_000], [0, 2]),
        ("negative window keeps everything", -1, [1_000, 1_000, 2_000], [0, 1, 2]),
        ("NaN window keeps everything", math.nan, [1_000, 1_000, 2_000], [0, 1, 2]),
        ("infinite window", math.inf, [1_000, 2_000, 90_000], [0]),
        ("inclusive fractional window", 2.5, [0, 2.5], [0]),
        ("outside a fractional window", 2.5, [0, 2.5001], [0, 1]),
        ("backdated fractional window", 2.5, [2.4, 0.1, 0.2], [0, 1]),
        ("a 10 s window", 10_000, [0, 9_000, 30_000], [0, 2]),
    ],
)
def test_windows(name, window, timestamps, kept):
    messages = [user(t) for t in timestamps]
    assert kept_indexes(messages, window_ms=window) == kept


def test_openclaw_options_mapping():
    messages = [user(1_000), user(1_000), user(2_000)]
    assert dedupe_duplicate_user_messages_for_compaction(messages, {"windowMs": 0}) == [
        messages[0],
        messages[2],
    ]


def test_non_finite_timestamps_are_kept_and_do_not_poison_retries():
    messages = [user(t) for t in (1_000, math.nan, math.inf, -math.inf, 2_000)]
    assert kept_indexes(messages) == [0, 1, 2, 3]


@pytest.mark.parametrize(
    "kind",
    ["image", "image_url", "input_image", "input_audio", "audio", "file", "document", "future"],
)
def test_any_non_text_block_rules_a_message_out(kind):
    def with_attachment(timestamp, source):
        return load_message(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": LONG},
                    {"type": kind, "source": source, "data": "x", "mimeType": "image/png"},
                ],
                "timestamp": timestamp,
            }
        )

    messages = [with_attachment(1_000, "first"), with_attachment(2_000, "second")]
    assert kept_indexes(messages) == [0, 1]


@pytest.mark.parametrize(
    ("media", "keep_both"),
    [
        ([{"path": "/tmp/attachment.png"}], True),
        ([{"url": "https://example.test/a.png"}], True),
        ([{"contentType": "image/png"}], True),
        ([{"kind": "image"}], True),
        ([{}], False),  # empty entries only keep legacy positions aligned
        ([{"path": "  "}], False),
        ([{"kind": "unknown"}], False),
        ([], False),
        ("not a list", False),
    ],
)
def test_persisted_media_rules_a_message_out(media, keep_both):
    first, second = user(1_000, metadata={"media": media}), user(2_000, metadata={"media": media})
    assert kept_indexes([first, second]) == ([0, 1] if keep_both else [0])


def test_non_user_messages_and_timestamps_of_other_types_are_kept():
    assistant = AssistantMessage(content=[TextContent(text=LONG)], timestamp=1_000)
    again = AssistantMessage(content=[TextContent(text=LONG)], timestamp=1_001)
    assert kept_indexes([assistant, again]) == [0, 1]
    as_dicts = [
        {"role": "user", "content": LONG, "timestamp": "2024-01-01"},
        {"role": "user", "content": LONG, "timestamp": "2024-01-01"},
    ]
    assert dedupe_duplicate_user_messages_for_compaction(as_dicts) == as_dicts


def test_wire_dicts_work_like_models():
    first = {"role": "user", "content": LONG, "timestamp": 1_000, "__openclaw": {"senderId": "a"}}
    retry = {"role": "user", "content": LONG, "timestamp": 2_000, "__openclaw": {"senderId": "a"}}
    other = {"role": "user", "content": LONG, "timestamp": 3_000, "__openclaw": {"senderId": "b"}}
    assert dedupe_duplicate_user_messages_for_compaction([first, retry, other]) == [first, other]


def test_always_a_new_list_and_inputs_untouched():
    messages = [user(1_000), user(2_000)]
    snapshot = [m.to_dict() for m in messages]
    unchanged = [user(1_000), user(90_000)]
    assert dedupe_duplicate_user_messages_for_compaction(unchanged) is not unchanged
    assert dedupe_duplicate_user_messages_for_compaction(unchanged) == unchanged
    assert dedupe_duplicate_user_messages_for_compaction(messages, window_ms=-1) is not messages
    dedupe_duplicate_user_messages_for_compaction(messages)
    assert [m.to_dict() for m in messages] == snapshot
    assert dedupe_duplicate_user_messages_for_compaction([]) == []


def test_bad_window_is_named():
    with pytest.raises(TypeError, match="window_ms"):
        dedupe_duplicate_user_messages_for_compaction([user(1)], window_ms="60s")
