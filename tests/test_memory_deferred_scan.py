"""A memory session keeps a message model's line unscanned until something reads the lines
(``_StoredSession.finish``): every reader must get exactly the bytes the eager
``encode_record`` at append time gave — same masking (with the secrets registered at the
append, not at the read), same key order, same floats — and the same errors at the append."""

from __future__ import annotations

import math
import random
import threading
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import anyio
import orjson
import pytest
from pydantic import field_serializer

from openclaw_runtime import TranscriptError, redaction
from openclaw_runtime.messages import (
    AssistantMessage,
    Cost,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from openclaw_runtime.redaction import register_secret, secret_matchers
from openclaw_runtime.transcript.jsonl import encode_record, finish_line, unscanned_line
from openclaw_runtime.transcript.memory import MemorySession, MemorySessionStore
from tests.append_support import Clock, fixed_entry_ids

SECRETS = ["hunter2-password-xyz", "12345678-1234-5678-1234-567812345678", 'pa"ss\\wörd-42']
PIECES = [
    *SECRETS, "sk-abcdefgh12345678", "Bearer abcdefgh12345678", "basic prose", "AIza" + "q" * 20,
    "é", "\u2028", "\x00", "\n", "😀", "plain words ", "Basic YWxhZGRpbjpvcGVu", "sk-", "0",
]  # fmt: skip
FLOATS = [0.1 + 0.2, 1e-7, 5e-324, 1.7976931348623157e308, -0.0, 1e16, 123.456, 2.5, math.inf]
SECRET_UUID = uuid.UUID(SECRETS[1])


@pytest.fixture
def registry() -> Iterator[tuple[set[str], int, Any]]:
    """The secret registry as the test found it, restored afterwards (and by ``_restore``)."""
    saved = (set(redaction._secrets), redaction._raw_count, redaction._matchers)
    yield saved
    _restore(saved)


def _restore(saved: tuple[set[str], int, Any]) -> None:
    with redaction._lock:
        redaction._secrets.clear()
        redaction._secrets.update(saved[0])
        redaction._raw_count, redaction._matchers = saved[1], saved[2]


def _eager_append_now(
    self: MemorySession,
    kind: str,
    payload: dict[str, Any],
    append_mode: str | None,
    parent: str | None,
    json_values: bool = False,
) -> str:
    """``MemorySession._append_now`` before this change, verbatim: every line encoded now."""
    stored = self._stored
    while True:
        with stored.lock:
            if stored.removed:
                raise TranscriptError(f"session {self.session_id} was deleted")
            lines = stored.lines
            if (stored.generation, len(lines)) == self._file_state:  # ``state()``, inline
                entry = self._new_entry(kind, payload, append_mode, parent)
                lines.append(encode_record(entry))
                self._file_state = (stored.generation, len(lines))
                break
        self._absorb(self._read_external_changes())
    self._record([entry])
    return str(entry["id"])


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randrange(1, 5)))


def _value(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.randrange(9 if depth < 2 else 6)
    if pick == 0:
        return _text(rng)
    if pick == 1:
        return rng.choice(FLOATS)
    if pick == 2:
        return rng.choice([0, -1, 2**63 - 1, -(2**63), 2**64 - 1, True, False, None])
    if pick == 3:
        return rng.random() * 10 ** rng.randrange(-20, 20)
    if pick == 4:
        return SECRET_UUID if rng.random() < 0.5 else (1, "two", 3.0)
    if pick == 5:
        return rng.choice(PIECES)
    if pick in (6, 7):
        return {_text(rng): _value(rng, depth + 1) for _ in range(rng.randrange(3))}
    return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]


def _message(rng: random.Random, n: int) -> Any:
    """A runtime message model (deferred scan) or a caller's wire dict (encoded at once)."""
    pick = rng.randrange(5)
    if pick == 0:
        return UserMessage(content=_text(rng), timestamp=n, extraNote=_value(rng))
    if pick == 1:
        call = ToolCall(id=f"c{n}", name="read", arguments={"path": _text(rng), "v": _value(rng)})
        cost = Cost(input=rng.choice(FLOATS), total=rng.random())
        return AssistantMessage(
            content=[call, TextContent(text=_text(rng))],
            api="a",
            provider="p",
            model="m",
            stop_reason="toolUse",
            usage=Usage(input=n, output=3, cost=cost),
            timestamp=n + 0.5,
        )
    if pick == 2:
        return ToolResultMessage(
            tool_call_id=f"c{n}",
            tool_name="read",
            content=[TextContent(text=_text(rng))],
            details=_value(rng),
            is_error=rng.random() < 0.2,
            timestamp=n,
        )
    if pick == 3:
        return {"role": "user", "content": [{"type": "text", "text": _text(rng)}], "timestamp": n}
    return {
        "role": "assistant",
        "content": [],
        "stopReason": "error",
        "x": _value(rng),
        "timestamp": n,
    }


async def _script(store: MemorySessionStore, seed: int) -> list[Any]:
    """A random script over two handles of one session; everything a reader could see."""
    rng = random.Random(seed)
    first = await store.create("s", cwd="/w")
    second = await store.open("s")
    seen: list[Any] = []
    for n in range(70):
        handle = first if rng.random() < 0.7 else second
        ids = [entry["id"] for entry in handle.get_entries()]
        side = "side" if rng.random() < 0.15 else None
        pick = rng.randrange(16)
        try:
            if pick <= 4:
                out: Any = await handle.append_message(_message(rng, n), append_mode=side)
            elif pick == 5:
                call = ToolCall(id="big", name="read", arguments={"n": 2**70})
                out = await handle.append_message(AssistantMessage(content=[call], timestamp=n))
            elif pick == 6:
                data = rng.choice([_value(rng), SECRET_UUID, {"u": SECRET_UUID}])
                out = await handle.append_custom_entry("state", data, append_mode=side)
            elif pick == 7:
                out = await handle.append_custom_message_entry(
                    "note", _text(rng), rng.random() < 0.5, details=_value(rng)
                )
            elif pick == 8 and ids:
                out = await handle.append_label(rng.choice(ids), rng.choice([_text(rng), None]))
            elif pick == 9 and ids:
                out = await handle.move_to(rng.choice([*ids, None]), rng.choice([None, "sum"]))
            elif pick == 10:
                register_secret(rng.choice(SECRETS))
                out = "registered"
            elif pick == 11:
                out = await handle.refresh()
            elif pick == 12 and rng.random() < 0.3:
                await handle.refresh()
                entries = handle.get_entries()
                await handle.rewrite_entries(entries[: len(entries) - rng.randrange(2)])
                out = "rewritten"
            elif pick == 13:
                out = store.export_jsonl("s")
            elif pick == 14:
                opened = await store.open("s")
                out = (opened.get_entries(), opened.build_session_context())
            else:
                out = await handle.append_model_change("p", f"m{n % 3}")
        except TranscriptError as exc:
            out = ("error", str(exc))
        seen.append(out)
    for handle in (first, second):
        await handle.refresh()
        seen.append((handle.get_entries(), handle.get_branch(), handle.build_session_context()))
    seen.append(store.export_jsonl("s"))
    store.delete("s")
    with pytest.raises(TranscriptError, match="does not exist"):
        store.export_jsonl("s")
    with pytest.raises(TranscriptError, match="deleted"):
        await first.append_message(UserMessage(content="late", timestamp=1))
    return seen


@pytest.mark.anyio
async def test_random_scripts_read_what_eager_encoding_wrote(
    monkeypatch: pytest.MonkeyPatch, registry: tuple[set[str], int, Any]
) -> None:
    deferred_lines = masked = 0
    for seed in range(16):
        _restore(registry)
        fixed_entry_ids(monkeypatch)
        store = MemorySessionStore(now=Clock())
        deferred = await _script(store, seed)
        _restore(registry)
        fixed_entry_ids(monkeypatch)
        with monkeypatch.context() as patch:
            patch.setattr(MemorySession, "_append_now", _eager_append_now)
            eager = await _script(MemorySessionStore(now=Clock()), seed)
        assert deferred == eager, seed
        exported = deferred[-1]
        deferred_lines += exported.count(b"\n")
        masked += exported.count(b"***")
    assert deferred_lines > 500 and masked > 100


def _json_record(rng: random.Random) -> dict[str, Any]:
    """A record of JSON values only, as a pydantic JSON-mode dump gives."""
    value = orjson.loads(orjson.dumps({"type": "message", "v": _value(rng), "t": _text(rng)}))
    assert isinstance(value, dict)
    return value


def test_finish_line_gives_encode_records_line(registry: tuple[set[str], int, Any]) -> None:
    rng = random.Random(5)
    masked = 0
    for n in range(3000):
        if n % 500 == 0:
            register_secret(SECRETS[n // 500 % 3])
        record = _json_record(rng)
        line = finish_line(unscanned_line(record), secret_matchers())
        assert line == encode_record(record), record
        masked += b"***" in line
    assert masked > 300


def test_a_line_is_masked_with_the_secrets_of_its_append(
    registry: tuple[set[str], int, Any],
) -> None:
    record = {"type": "message", "text": f"key {SECRETS[0]}"}
    line = unscanned_line(record)
    before = secret_matchers()
    register_secret(SECRETS[0])
    assert finish_line(line, before) == line  # not registered then: not masked, as eager
    assert finish_line(line, secret_matchers()) == encode_record(record)
    assert b"***" in encode_record(record)


@pytest.mark.anyio
async def test_secrets_registered_or_forgotten_after_an_append_change_nothing(
    registry: tuple[set[str], int, Any],
) -> None:
    store = MemorySessionStore()
    session = await store.create("s", cwd="/w")
    before = UserMessage(content=f"early {SECRETS[0]}", timestamp=1)
    await session.append_message(before)
    register_secret(SECRETS[0])
    await session.append_message(UserMessage(content=f"late {SECRETS[0]}", timestamp=2))
    redaction.clear_registered_secrets()
    await session.append_message(UserMessage(content=f"after {SECRETS[0]}", timestamp=3))
    lines = store.export_jsonl("s").splitlines()
    assert SECRETS[0].encode() in lines[1] and b"early" in lines[1]
    assert SECRETS[0].encode() not in lines[2] and b"late ***" in lines[2]
    assert SECRETS[0].encode() in lines[3]


@pytest.mark.anyio
async def test_changes_after_the_append_never_reach_the_line() -> None:
    store = MemorySessionStore()
    session = await store.create("s", cwd="/w")
    wire = {"role": "user", "content": [{"type": "text", "text": "as sent"}], "timestamp": 1}
    await session.append_message(wire)
    call = ToolCall(id="c1", name="read", arguments={"path": "a.txt"})
    model = AssistantMessage(content=[call], stop_reason="toolUse", timestamp=2)
    await session.append_message(model)
    expected = store.export_jsonl("s")
    # the caller's dict, the caller's model, the tree's entries and a context's messages
    wire["content"][0]["text"] = "changed"  # type: ignore[index]
    wire["extra"] = "added"
    call.arguments["path"] = "b.txt"
    for entry in session.get_entries():
        entry["message"]["timestamp"] = 99
        entry["message"]["content"].append({"type": "text", "text": "x"})
    session.build_session_context().messages[-1].timestamp = 98
    assert store.export_jsonl("s") == expected
    assert b"as sent" in expected and b"a.txt" in expected
    assert b'"timestamp":99' not in expected and b"changed" not in expected


@pytest.mark.anyio
async def test_what_cannot_be_encoded_still_fails_at_the_append() -> None:
    store = MemorySessionStore()
    session = await store.create("s", cwd="/w")
    call = ToolCall(id="c1", name="read", arguments={"n": 2**70})
    with pytest.raises(TranscriptError, match="not JSON-serialisable"):
        await session.append_message(AssistantMessage(content=[call], timestamp=1))
    assert session.get_entries() == []
    assert store.export_jsonl("s").count(b"\n") == 1


@pytest.mark.anyio
async def test_only_a_reader_scans_and_each_line_once(monkeypatch: pytest.MonkeyPatch) -> None:
    scanned: list[bytes] = []
    real = finish_line

    def counting(line: bytes, matchers: Any) -> bytes:
        scanned.append(line)
        return real(line, matchers)

    monkeypatch.setattr("openclaw_runtime.transcript.memory.finish_line", counting)
    store = MemorySessionStore()
    session = await store.create("s", cwd="/w")
    for n in range(5):
        await session.append_message(UserMessage(content=f"m{n}", timestamp=n))
    assert scanned == []
    first = store.export_jsonl("s")
    assert len(scanned) == 5
    await session.append_message(UserMessage(content="more", timestamp=9))
    reader = await store.open("s")
    assert len(scanned) == 6
    assert store.export_jsonl("s") == first + scanned[-1]
    await session.append_custom_entry("x")  # encoded at once: the unscanned ones go first
    await session.append_message(UserMessage(content="last", timestamp=10))
    assert await reader.refresh()
    assert len(scanned) == 7
    assert len(reader.get_entries()) == 8


def _threaded_handle(store: MemorySessionStore, tag: str, out: list[Any]) -> None:
    async def run() -> None:
        session = await store.open("s")
        for n in range(150):
            text = f"{tag}{n} Bearer abcdefgh{n:08d} {SECRETS[n % 3]}"
            if n % 3 == 0:
                message: Any = UserMessage(content=text, timestamp=n)
            elif n % 3 == 1:
                message = ToolResultMessage(
                    tool_call_id=f"{tag}{n}", tool_name="read",
                    content=[TextContent(text=text)], details={"f": n / 7}, timestamp=n,
                )  # fmt: skip
            else:
                message = {"role": "user", "content": text, "timestamp": n}
            out.append(await session.append_message(message))
        await session.refresh()
        out.append(session)

    anyio.run(run)


def _reader(store: MemorySessionStore, snapshots: list[bytes], stop: threading.Event) -> None:
    while not stop.is_set():
        snapshots.append(store.export_jsonl("s"))


@pytest.mark.anyio
async def test_handles_in_threads_read_finished_lines_only(
    registry: tuple[set[str], int, Any],
) -> None:
    register_secret(SECRETS[2])
    store = MemorySessionStore()
    await store.create("s", cwd="/w")
    outs: list[list[Any]] = [[], []]
    snapshots: list[bytes] = []
    stop = threading.Event()
    threads = [
        threading.Thread(target=_threaded_handle, args=(store, tag, out))
        for tag, out in zip("ab", outs, strict=True)
    ]
    reader = threading.Thread(target=_reader, args=(store, snapshots, stop))
    for thread in (*threads, reader):
        thread.start()
    for thread in threads:
        thread.join()
    stop.set()
    reader.join()
    final = store.export_jsonl("s")
    assert final.count(b"\n") == 301
    for snapshot in snapshots:  # every read is a prefix of the end: no line changed later
        assert final.startswith(snapshot)
    lines = final.splitlines(keepends=True)
    for out in outs:
        session = out[-1]
        assert isinstance(session, MemorySession)
        own = set(out[:-1])
        by_id = {entry["id"]: entry for entry in session.get_entries()}
        for line in lines[1:]:
            entry_id = orjson.loads(line)["id"]
            if entry_id in own:  # the appended entry itself, encoded the old way, now
                assert encode_record(by_id[entry_id]) == line
    assert SECRETS[2].encode() not in final and b"Bearer ***" in final


@pytest.mark.anyio
async def test_a_rewrite_leaves_no_line_to_scan(registry: tuple[set[str], int, Any]) -> None:
    register_secret(SECRETS[1])
    other = await MemorySessionStore().create("o", cwd="/w")
    await other.append_custom_entry("state", {"u": SECRET_UUID})  # masked in the line
    store = MemorySessionStore()
    session = await store.create("s", cwd="/w")
    await session.append_message(UserMessage(content=f"m {SECRETS[1]}", timestamp=1))
    await session.rewrite_entries(other.get_entries())
    expected = b"".join(map(encode_record, [session._tree.header, *other.get_entries()]))
    assert store.export_jsonl("s") == expected
    assert SECRETS[1].encode() not in expected and b'"u":"***"' in expected


class _SerializedDetails(ToolResultMessage):
    """A subclass whose serializer returns objects JSON has no type for: JSON mode turns
    them into JSON values (string keys, lists, strings) before the line is made."""

    @field_serializer("details")
    def _details(self, value: Any) -> Any:
        return {1: SECRET_UUID, "set": {2, 3}, "n": Decimal("1.5"), "b": b"Bearer abcdefgh1"}


@pytest.mark.anyio
async def test_json_mode_dumps_read_back_exactly(
    monkeypatch: pytest.MonkeyPatch, registry: tuple[set[str], int, Any]
) -> None:
    register_secret(SECRETS[1])

    async def export() -> bytes:
        store = MemorySessionStore(now=Clock())
        session = await store.create("s", cwd="/w")
        for n in range(3):
            message = _SerializedDetails(
                tool_call_id=f"c{n}",
                tool_name="read",
                details=None,
                extra=(SECRET_UUID, b"sk-abcdefgh12345678", {n: 0.1 + 0.2}),
                timestamp=n,
            )
            await session.append_message(message)
        return store.export_jsonl("s")

    fixed_entry_ids(monkeypatch)
    deferred = await export()
    fixed_entry_ids(monkeypatch)
    with monkeypatch.context() as patch:
        patch.setattr(MemorySession, "_append_now", _eager_append_now)
        eager = await export()
    assert deferred == eager
    assert SECRETS[1].encode() not in deferred and b"sk-***" in deferred
