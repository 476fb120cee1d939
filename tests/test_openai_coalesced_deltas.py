"""Text deltas that arrive in one network read, delivered as one event: nothing else changes.

``OpenAICompatProvider`` folds the plain content deltas of one read into one ``text_delta``
(``StreamOptions.coalesce_deltas``, on by default). What must hold, checked here against the
one-event-per-chunk path on the same reads:

* the coalesced events are the per-chunk events with runs of consecutive ``text_delta``s of
  one block and one read joined: every other event is the same, each joined delta is the
  concatenation of its run, and the partial message a consumer sees at it is the one the
  per-chunk path showed at the run's last delta — on every chunk shape of
  ``test_openai_stream_fast_path`` (× a finished and a cut ending), with the chunks cut into
  reads anywhere, over real HTTP;
* the final message, usage, stop reason and errors are the same;
* the builder ends exactly as after single appends, short texts and past the batching size;
* a run (``Runtime.run``) gives the same reply, thinking and transcript entries, and block
  replies (whose cut points depend on delta boundaries) switch coalescing off.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from openclaw_runtime import Runtime
from openclaw_runtime.llm import Context, StreamOptions
from openclaw_runtime.messages import UserMessage
from openclaw_runtime.providers import openai_compat
from openclaw_runtime.providers.builder import _LARGE_TEXT, MessageBuilder
from openclaw_runtime.providers.http import HTTPClientPool
from openclaw_runtime.providers.openai_compat import OpenAICompatProvider
from openclaw_runtime.providers.sse import SSEDecoder
from openclaw_runtime.reply import BlockChunking, EmbeddedBlockChunker
from openclaw_runtime.runner.reply_payload import ReplyPayload
from openclaw_runtime.testing import ScriptedReply
from openclaw_runtime.testing.server import sse_body
from tests.test_openai_stream_fast_path import (
    FIRST,
    MODEL,
    SHAPES,
    STREAMS,
    TAILS,
    USAGE,
    by_feed,
    chunk,
    render,
    scrub,
)

pytestmark = pytest.mark.anyio

# --------------------------------------------------------------------------- the builder


@pytest.mark.parametrize(
    ("before", "pieces"),
    [
        (0, [3]),
        (0, [1, 2, 3, 4]),
        (10, [5] * 40),
        (_LARGE_TEXT - 10, [4, 4, 4, 4]),  # crosses the batching size inside the run
        (_LARGE_TEXT - 4, [4, 4]),  # the last piece starts exactly at the size
        (_LARGE_TEXT - 5, [4, 4]),  # the last piece starts just under it
        (_LARGE_TEXT + 1, [2] * 70),  # batching already: a flush inside the run
        (_LARGE_TEXT + 1, [2] * 63),
    ],
)
def test_append_texts_leaves_the_builder_as_single_appends_do(before, pieces):
    words = ["".join(chr(97 + (i + j) % 26) for j in range(n)) for i, n in enumerate(pieces)]

    def builder() -> MessageBuilder:
        made = MessageBuilder(MODEL)
        made.start()
        made.text("x" * before or "x", [])
        return made

    single, merged = builder(), builder()
    for word in words:
        out: list[Any] = []
        if single.append_text(word) is None:
            single.text(word, out)
    event = merged.append_texts(words)
    assert event.delta == "".join(words) and event.content_index == 0
    assert event.partial is merged.message
    block_single, block_merged = single._current_text, merged._current_text
    assert block_single is not None and block_merged is not None
    assert block_merged.block.text == block_single.block.text  # what a partial shows
    assert block_merged.pending == block_single.pending  # what is joined later
    assert merged.message.content == single.message.content


# --------------------------------------------------------------------------- the decoder


def by_one_event_first(pieces: list[bytes]) -> list[bytes]:
    """What the provider decodes: ``one_event`` first, ``feed_data`` when it says no."""
    decoder = SSEDecoder()
    found: list[bytes] = []
    for piece in pieces:
        data = decoder.one_event(piece)
        found += [data] if data is not None else decoder.feed_data(piece)
    return found + [e.data for e in decoder.close()]


@pytest.mark.parametrize("name", list(STREAMS))
def test_one_event_then_feed_data_equals_feed(name: str) -> None:
    raw = STREAMS[name]
    for pieces in (
        [raw],
        [block + b"\n\n" for block in raw.split(b"\n\n")],  # a read per event
        *([raw[:cut], raw[cut:]] for cut in range(1, len(raw), max(1, len(raw) // 100))),
    ):
        assert by_one_event_first(pieces) == by_feed(pieces), pieces[:3]


def test_one_event_takes_only_a_whole_lone_event() -> None:
    decoder = SSEDecoder()
    assert decoder.one_event(b'data: {"a":1}\n\n') == b'{"a":1}'
    assert decoder.one_event(b"data: 1\n\ndata: 2\n\n") is None  # two events
    assert decoder.one_event(b"data: 1\r\n\r\n") is None
    assert decoder.one_event(b"event: x\ndata: 1\n\n") is None
    assert decoder.feed_data(b"data: {") == []  # an unfinished event is pending now
    assert decoder.one_event(b"data: 2\n\n") is None  # so this read continues it
    assert decoder.feed_data(b"data: 2\n\n") == [b"{data: 2"]


# --------------------------------------------------------------------------- over real HTTP


class Reads:
    """Wraps the provider's ``OpenBody``: reads the real body (real HTTP), then hands it to
    the provider cut at ``cuts`` (the same reads for both paths), and tags every event the
    consumer receives with the read it came from."""

    def __init__(self, cuts: list[int]) -> None:
        self.cuts = cuts
        self.current = -1

    def __call__(self, *args: Any) -> Any:
        opened = REAL_OPEN_BODY(*args)
        opened.raw = self._reads(opened.raw)
        return opened

    async def _reads(self, real: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        body = b"".join([part async for part in real])
        edges = [0, *sorted({c for c in self.cuts if 0 < c < len(body)}), len(body)]
        for index in range(len(edges) - 1):
            self.current = index
            yield body[edges[index] : edges[index + 1]]
        self.current = len(edges)  # what comes after the body


REAL_OPEN_BODY = openai_compat.OpenBody


async def stream_through(
    base_url: str, cuts: list[int], *, coalesce: bool, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[tuple[int, Any]], Any]:
    """(read, rendered event at hand-out) for every event, and the final message."""
    reads = Reads(cuts)
    monkeypatch.setattr(openai_compat, "OpenBody", reads)
    provider = OpenAICompatProvider()
    model = MODEL.model_copy(update={"base_url": base_url + "/v1"})
    try:
        stream = provider.stream_fn(
            model,
            Context("", [UserMessage(content="go")]),
            StreamOptions(api_key="k", coalesce_deltas=coalesce),
        )
        seen = [(reads.current, render([event])[0]) async for event in stream]
        return seen, scrub((await stream.result()).to_dict())
    finally:
        await provider.aclose()


def is_a_merge_of(coalesced: list[tuple[int, Any]], single: list[tuple[int, Any]]) -> bool:
    """``coalesced`` is ``single`` with runs of consecutive text deltas of one block that came
    from one read joined (delta: their concatenation; partial: the run's last)."""
    at = 0
    for read, event in coalesced:
        if at >= len(single):
            return False
        if event["type"] != "text_delta":
            if (read, event) != single[at]:
                return False
            at += 1
            continue
        joined, last = "", None
        while at < len(single) and joined != event["delta"]:
            s_read, s_event = single[at]
            if s_read != read or s_event["type"] != "text_delta":
                return False
            if s_event["contentIndex"] != event["contentIndex"]:
                return False
            joined += s_event["delta"]
            last = s_event
            at += 1
        if last is None or joined != event["delta"] or last["partial"] != event["partial"]:
            return False
    return at == len(single)


def shape_stream(name: str, tail: str) -> list[Any]:
    plain = [chunk({"content": f" p{i}"}) for i in range(3)]
    return [FIRST, *plain, SHAPES[name], SHAPES[name], *plain, *TAILS[tail]]


@pytest.fixture
def serve(local_http_server: Any) -> Any:
    def enqueue(events: list[Any]) -> bytes:
        body = sse_body(events)
        local_http_server.enqueue(ScriptedReply(body=[body]), ScriptedReply(body=[body]))
        return body

    return enqueue


@pytest.mark.parametrize("tail", list(TAILS))
@pytest.mark.parametrize("name", list(SHAPES))
async def test_every_shape_in_one_read_is_a_merge_of_the_per_chunk_events(
    local_http_server, serve, monkeypatch, name, tail
):
    serve(shape_stream(name, tail))
    base = local_http_server.base_url
    single, single_final = await stream_through(base, [], coalesce=False, monkeypatch=monkeypatch)
    merged, merged_final = await stream_through(base, [], coalesce=True, monkeypatch=monkeypatch)
    assert merged_final == single_final  # message, usage, stop reason, error
    assert is_a_merge_of(merged, single), (merged, single)
    assert len(merged) < len(single)  # the plain deltas around the shape did merge


async def test_cut_anywhere_the_events_are_a_merge_of_the_per_chunk_events(
    local_http_server, serve, monkeypatch
):
    events = [
        FIRST,
        *(chunk({"content": f" w{i}"}) for i in range(4)),
        SHAPES["reasoning_content"],
        *(chunk({"content": f" v{i}"}) for i in range(3)),
        SHAPES["tool call start"],
        SHAPES["tool call arguments"],
        chunk(finish="tool_calls"),
        {"id": "chatcmpl-1", "choices": [], "usage": USAGE},
    ]
    body = serve(events)
    base = local_http_server.base_url
    step = max(1, len(body) // 60)
    cut_sets = [[cut] for cut in range(1, len(body), step)]
    cut_sets += [list(range(start, len(body), 97)) for start in (13, 50)]  # many reads
    for cuts in cut_sets:
        local_http_server.enqueue(ScriptedReply(body=[body]), ScriptedReply(body=[body]))
        single, single_final = await stream_through(
            base, cuts, coalesce=False, monkeypatch=monkeypatch
        )
        merged, merged_final = await stream_through(
            base, cuts, coalesce=True, monkeypatch=monkeypatch
        )
        assert merged_final == single_final, cuts
        assert is_a_merge_of(merged, single), cuts
        # the reads really were cut there (the replay is in place): deltas of several reads
        deltas_from = {read for read, event in single if event["type"] == "text_delta"}
        assert min(deltas_from) >= 0 and (len(cuts) == 1 or len(deltas_from) > 3)


async def test_a_read_per_event_is_one_event_per_chunk(local_http_server, serve, monkeypatch):
    events = [FIRST, *(chunk({"content": f" w{i}"}) for i in range(6)), *TAILS["finished"]]
    body = serve(events)
    cuts = [i + 2 for i in range(len(body)) if body[i : i + 2] == b"\n\n"]
    single, _ = await stream_through(
        local_http_server.base_url, cuts, coalesce=False, monkeypatch=monkeypatch
    )
    merged, _ = await stream_through(
        local_http_server.base_url, cuts, coalesce=True, monkeypatch=monkeypatch
    )
    assert merged == single


def test_the_merge_check_catches_a_wrong_merge() -> None:
    """``is_a_merge_of`` fails on the merges the provider must never make."""
    partial = {"content": [{"type": "text", "text": "ab"}]}
    later = {"content": [{"type": "text", "text": "abc"}]}

    def delta(text: str, seen: Any, index: int = 0) -> dict[str, Any]:
        return {"type": "text_delta", "contentIndex": index, "delta": text, "partial": seen}

    single = [(0, delta("a", partial)), (0, delta("b", partial)), (1, delta("c", later))]
    assert is_a_merge_of([(0, delta("ab", partial)), (1, delta("c", later))], single)
    assert not is_a_merge_of([(0, delta("abc", later))], single)  # across two reads
    assert not is_a_merge_of([(0, delta("ab", later)), (1, delta("c", later))], single)
    assert not is_a_merge_of([(0, delta("a", partial))], single)  # text lost


# --------------------------------------------------------------------------- a whole run

TAGGED = (
    "<think>plan: two parts</think>\n\nFirst part, with `<final>` in code.\n\n"
    "Second part. [[reply_to_current]] End."
)


def run_config(tmp_path: Path, base_url: str) -> dict[str, Any]:
    return {
        "state_dir": str(tmp_path / "state"),
        "models": [
            {
                "id": "m1",
                "api": "openai-completions",
                "provider": "local",
                "baseUrl": base_url + "/v1",
                "contextWindow": 64_000,
                "maxTokens": 1024,
            }
        ],
        "agent": {"model": "local/m1", "timeout_seconds": 20},
    }


def tagged_events(text: str) -> list[Any]:
    pieces = [text[i : i + 3] for i in range(0, len(text), 3)]
    return [
        chunk({"role": "assistant", "content": pieces[0]}),
        *(chunk({"content": piece}) for piece in pieces[1:]),
        chunk(finish="stop"),
        {"id": "chatcmpl-1", "choices": [], "usage": USAGE},
    ]


def entries(path: str) -> list[Any]:
    found = []
    for line in Path(path).read_text().splitlines():
        entry = json.loads(line)
        if entry.get("type") == "message":
            found.append(scrub_ids(entry["message"]))
    return found


def scrub_ids(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: scrub_ids(v) for k, v in value.items() if k not in ("timestamp", "id")}
    if isinstance(value, list):
        return [scrub_ids(v) for v in value]
    return value


async def test_a_run_gives_the_same_reply_and_transcript_and_blocks_stay_split(
    tmp_path, local_http_server
):
    body = sse_body(tagged_events(TAGGED))  # the whole answer in one write: one read or two
    results = {}
    for mode in ("coalesced", "blocks"):
        local_http_server.enqueue(ScriptedReply(body=[body]))
        deltas: list[str] = []
        blocks: list[str] = []

        def on_event(event: Any, deltas: list[str] = deltas) -> None:
            inner = getattr(event, "assistant_message_event", None)
            if event.type == "message_update" and inner.type == "text_delta":
                deltas.append(inner.delta)

        async def on_block(payload: ReplyPayload, blocks: list[str] = blocks) -> None:
            blocks.append(payload.text or "")

        extra: dict[str, Any] = {}
        if mode == "blocks":
            extra = {"block_streaming": True, "on_block_reply": on_block}
        state = tmp_path / mode
        async with Runtime(
            run_config(state, local_http_server.base_url), load_entrypoints=False
        ) as runtime:
            result = await runtime.run("hi", on_event=on_event, **extra)
        assert result.ok, result
        results[mode] = (result, deltas, blocks, entries(result.session_file))
    merged, split = results["coalesced"], results["blocks"]
    assert merged[0].text == split[0].text
    assert "".join(merged[1]) == "".join(split[1])  # the same reply text streamed
    assert len(merged[1]) < len(split[1])  # in fewer events
    assert merged[3] == split[3]  # the same transcript messages (thinking split out)
    # with block replies on, every server chunk (3 characters) was its own delta — the tag
    # splitter joins only what it held back as a possible tag — so the chunker cut the
    # blocks from split deltas; coalesced, the read's deltas came as long ones
    assert max(map(len, split[1])) <= 8 < max(map(len, merged[1]))
    assert split[2] and not merged[2]
    assert all("plan: two parts" not in block for block in split[2])


def test_block_replies_depend_on_delta_boundaries() -> None:
    """Why block streaming switches coalescing off: the chunker drains after every delta, and
    where it cuts depends on how long the buffer was then."""
    text = "One two three four five. Six seven eight nine ten. Eleven twelve thirteen."
    chunking = BlockChunking(min_chars=20, max_chars=60, break_preference="sentence")

    def blocks(deltas: list[str]) -> list[str]:
        chunker = EmbeddedBlockChunker(chunking)
        out: list[str] = []
        for delta in deltas:
            chunker.append(delta)
            out += chunker.drain()
        return out + chunker.drain(force=True)

    split = blocks([text[i : i + 3] for i in range(0, len(text), 3)])
    merged = blocks([text])
    assert "".join(split).replace(" ", "") == "".join(merged).replace(" ", "")
    assert split != merged


async def test_a_transport_without_a_socket_reads_through_stream_chunks_alike(
    local_http_server, serve, monkeypatch
):
    """No socket to watch (``httpx.MockTransport``, HTTP/2): every read is guarded in
    ``stream_chunks`` instead of read directly; the events are the same."""
    events = [FIRST, *(chunk({"content": f" w{i}"}) for i in range(5)), *TAILS["finished"]]
    body = serve(events)
    direct, direct_final = await stream_through(
        local_http_server.base_url, [], coalesce=True, monkeypatch=monkeypatch
    )
    monkeypatch.setattr(openai_compat, "OpenBody", REAL_OPEN_BODY)
    served: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        served.append(str(request.url))
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    provider = OpenAICompatProvider(pool=HTTPClientPool(transport=httpx.MockTransport(handler)))
    try:
        stream = provider.stream_fn(
            MODEL, Context("", [UserMessage(content="go")]), StreamOptions(api_key="k")
        )
        guarded = [render([event])[0] async for event in stream]
        guarded_final = scrub((await stream.result()).to_dict())
    finally:
        await provider.aclose()
    assert served == ["http://127.0.0.1:9/v1/chat/completions"]
    assert guarded == [event for _, event in direct]
    assert guarded_final == direct_final
