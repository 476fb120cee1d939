"""Secrets inside values orjson writes natively are masked in transcript lines.

``encode_record`` used to mask a flagged line by walking the record with ``redact_data``,
which knows dicts, lists, tuples and strings only. orjson also writes dataclasses, UUIDs,
enums and datetimes, so a credential in a custom entry's dataclass (or a UUID that is a
registered secret) reached the file as it was. The line is now read back and written again
(``redaction.redact_json``); for plain JSON records that gives the same bytes as before.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from openclaw_runtime import redaction
from openclaw_runtime.redaction import redact_data, redact_json, register_secret
from openclaw_runtime.transcript.jsonl import encode_record
from openclaw_runtime.transcript.memory import MemorySessionStore
from openclaw_runtime.transcript.store import JsonlSessionStore

SECRET = "native-types-Secret-0123456789"
KEY_SHAPED = "sk-abcdefgh12345678abcdefgh"
SECRET_UUID = uuid.UUID("6f1c2d3e-4a5b-4c6d-8e9f-0a1b2c3d4e5f")


@pytest.fixture(autouse=True)
def registered() -> Iterator[None]:
    saved = (set(redaction._secrets), redaction._raw_count, redaction._matchers)
    register_secret(SECRET)
    register_secret(str(SECRET_UUID))
    yield
    with redaction._lock:
        redaction._secrets.clear()
        redaction._secrets.update(saved[0])
        redaction._raw_count, redaction._matchers = saved[1], saved[2]


@dataclass
class Credentials:
    user: str
    token: str


@dataclass
class Settings:
    name: str
    credentials: list[Credentials] = field(default_factory=list)


class Flavour(enum.Enum):
    PLAIN = "plain"
    LEAKY = SECRET


NATIVE = [
    ("dataclass field", Credentials(user="ann", token=SECRET), [SECRET]),
    ("key-shaped value in a dataclass", Credentials(user="ann", token=KEY_SHAPED), [KEY_SHAPED]),
    (
        "dataclasses nested in a list",
        Settings(name="x", credentials=[Credentials("a", SECRET), Credentials("b", KEY_SHAPED)]),
        [SECRET, KEY_SHAPED],
    ),
    ("a UUID that is a registered secret", {"id": SECRET_UUID}, [str(SECRET_UUID)]),
    ("an enum whose value is a secret", [Flavour.PLAIN, Flavour.LEAKY], [SECRET]),
    ("a dataclass in a tuple in a dict", {"t": (1, Credentials("c", SECRET))}, [SECRET]),
]


@pytest.mark.parametrize(("value", "secrets"), [c[1:] for c in NATIVE], ids=[c[0] for c in NATIVE])
def test_encode_record_masks_secrets_in_natively_written_values(
    value: Any, secrets: list[str]
) -> None:
    line = encode_record({"type": "custom", "customType": "cfg", "data": value})
    for secret in secrets:
        assert secret.encode() not in line
    decoded = orjson.loads(line)  # one valid JSON line, the rest kept
    assert decoded["type"] == "custom" and decoded["customType"] == "cfg"
    assert b"***" in line and line.endswith(b"\n") and line.count(b"\n") == 1


PLAIN = [
    ("strings", {"a": f"x {SECRET} y", "b": "clean"}),
    ("numbers", {"f": [0.1, 1e16, -2.5e-300, 3.0], "i": [2**63 - 1, -(2**63)], "s": SECRET}),
    ("unicode and escapes", {"u": f'é\u2028"{SECRET}"\n\t', "k": KEY_SHAPED}),
    ("secret in a key", {SECRET: 1, "nested": [{"deep": [SECRET, None, True, False]}]}),
]


@pytest.mark.parametrize("record", [c[1] for c in PLAIN], ids=[c[0] for c in PLAIN])
def test_plain_json_records_are_masked_exactly_as_before(record: dict[str, Any]) -> None:
    before = orjson.dumps(redact_data(record)) + b"\n"  # the old masking path
    assert encode_record(record) == before
    assert redact_json(orjson.dumps(record, option=orjson.OPT_INDENT_2)) == orjson.dumps(
        redact_data(record)
    )
    assert redact_json(
        orjson.dumps(record, option=orjson.OPT_INDENT_2), option=orjson.OPT_INDENT_2
    ) == orjson.dumps(redact_data(record), option=orjson.OPT_INDENT_2)


def test_a_clean_record_is_orjsons_own_line() -> None:
    record = {"type": "custom", "data": Credentials(user="ann", token="harmless")}
    assert encode_record(record) == orjson.dumps(record) + b"\n"


@pytest.mark.anyio
async def test_a_custom_entry_holding_a_dataclass_reaches_no_store_unmasked(
    tmp_path: Path,
) -> None:
    data = Settings(name="svc", credentials=[Credentials("ann", SECRET)])
    files = JsonlSessionStore(tmp_path)
    session = await files.create("s1", cwd="/")
    await session.append_custom_entry("cfg", data)
    await session.append_custom_entry("id", {"run": SECRET_UUID})
    await session.flush()
    await session.aclose()
    written = (tmp_path / "s1.jsonl").read_bytes()
    assert SECRET.encode() not in written and str(SECRET_UUID).encode() not in written
    assert written.count(b"***") == 2

    memory = MemorySessionStore()
    kept = await memory.create("m1", cwd="/")
    await kept.append_custom_entry("cfg", data)
    exported = memory.export_jsonl("m1")
    assert SECRET.encode() not in exported and b'"user":"ann"' in exported
