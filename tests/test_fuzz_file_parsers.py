"""Fuzzing the parsers a file's bytes reach (issue 9 "Done when"): the transcript loader and
the config loader raise nothing but their documented errors, whatever the bytes.

* transcript loader (``SessionManager.open`` with and without repair, then
  ``build_session_context``, which every run calls next): only ``TranscriptError``;
* a run on a fuzzed session (the offline echo model): never raises, ``TranscriptError``
  aside;
* config loader (``RuntimeConfig.load``): only ``ConfigurationError``, for arbitrary bytes
  and for near-valid TOML built from the real section and key names.

Example counts are modest (CI time); each example works in its own temp directory.
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openclaw_runtime import ConfigurationError, Runtime, RuntimeConfig, TranscriptError
from openclaw_runtime.transcript import SessionManager

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --------------------------------------------------------------------------- JSON values

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the plausible value, sometimes any JSON value at all."""
    return st.one_of(strategy, strategy, strategy, json_values)


block_types = st.sampled_from(["text", "thinking", "image", "toolCall", "toolResult", "x"])
blocks = st.fixed_dictionaries(
    {"type": maybe(block_types)},
    optional={
        "text": maybe(st.text(max_size=20)),
        "thinking": maybe(st.text(max_size=10)),
        "thinkingSignature": maybe(st.text(max_size=10)),
        "id": maybe(st.text(max_size=6)),
        "name": maybe(st.sampled_from(["read", "get_weather", ""])),
        "arguments": maybe(st.dictionaries(st.text(max_size=4), scalars, max_size=2)),
        "data": maybe(st.just("AA==")),
        "mimeType": maybe(st.just("image/png")),
    },
)
contents = st.one_of(st.text(max_size=20), st.lists(maybe(blocks), max_size=4), json_values)
messages = st.fixed_dictionaries(
    {
        "role": maybe(
            st.sampled_from(["user", "assistant", "toolResult", "custom", "branchSummary"])
        ),
    },
    optional={
        "content": contents,
        "stopReason": maybe(st.sampled_from(["stop", "error", "toolUse", "aborted", "length"])),
        "toolCallId": maybe(st.text(max_size=6)),
        "toolName": maybe(st.text(max_size=6)),
        "isError": maybe(st.booleans()),
        "timestamp": maybe(st.integers(min_value=0, max_value=2**41)),
        "provider": maybe(st.text(max_size=6)),
        "model": maybe(st.text(max_size=6)),
        "usage": json_values,
        "errorMessage": maybe(st.text(max_size=10)),
        "excludeFromContext": maybe(st.booleans()),
    },
)
ENTRY_TYPES = [
    "message",
    "custom_message",
    "custom",
    "compaction",
    "branch_summary",
    "leaf",
    "label",
    "session_info",
    "model_change",
    "thinking_level_change",
    "active_tools_change",
]


@st.composite
def entries(draw: st.DrawFn, ids: list[str]) -> dict[str, Any]:
    entry_id = draw(st.text(alphabet="abcdef0123", min_size=1, max_size=4))
    parent = draw(st.one_of(st.none(), st.sampled_from(ids))) if ids else None
    ids.append(entry_id)
    entry: dict[str, Any] = {
        "type": draw(maybe(st.sampled_from(ENTRY_TYPES))),
        "id": draw(maybe(st.just(entry_id))),
        "parentId": draw(maybe(st.just(parent))),
        "timestamp": draw(maybe(st.just("2026-01-01T00:00:00.000Z"))),
    }
    extra = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "message": maybe(messages),
                "content": contents,
                "customType": maybe(st.text(max_size=4)),
                "display": maybe(st.booleans()),
                "summary": maybe(st.text(max_size=10)),
                "firstKeptEntryId": maybe(st.sampled_from([*ids, "nope"])),
                "tokensBefore": maybe(st.integers()),
                "fromId": maybe(st.text(max_size=4)),
                "targetId": maybe(st.one_of(st.none(), st.sampled_from([*ids, "nope"]))),
                "appendParentId": maybe(st.one_of(st.none(), st.sampled_from(ids))),
                "label": maybe(st.text(max_size=4)),
                "name": maybe(st.text(max_size=4)),
                "provider": maybe(st.text(max_size=4)),
                "modelId": maybe(st.text(max_size=4)),
                "thinkingLevel": maybe(st.sampled_from(["off", "high"])),
                "activeToolNames": maybe(st.lists(st.text(max_size=4), max_size=2)),
                "appendMode": maybe(st.just("side")),
            },
        )
    )
    entry.update(extra)
    if entry["type"] == "message" and "message" not in entry:
        entry["message"] = draw(messages)
    return entry


@st.composite
def session_files(draw: st.DrawFn) -> bytes:
    header: Any = {
        "type": draw(maybe(st.just("session"))),
        "version": draw(maybe(st.just(3))),
        "id": draw(maybe(st.just("fuzz"))),
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": draw(maybe(st.just("/w"))),
    }
    ids: list[str] = []
    records = [header, *draw(st.lists(entries(ids), max_size=8))]
    lines = [json.dumps(record, separators=(",", ":")).encode() for record in records]
    if draw(st.booleans()):  # damage: cut the end, or flip one byte
        data = b"\n".join(lines)
        if data and draw(st.booleans()):
            data = data[: draw(st.integers(min_value=0, max_value=len(data)))]
        elif data:
            at = draw(st.integers(min_value=0, max_value=len(data) - 1))
            data = data[:at] + bytes([draw(st.integers(0, 255))]) + data[at + 1 :]
        return data
    return b"\n".join(lines) + b"\n"


def load_transcript(data: bytes) -> None:
    """Open ``data`` as a session file both ways and build its context."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "fuzz.jsonl"
        for repair in (False, True, True):  # the second repair must also be harmless
            path.write_bytes(data) if repair is False else None
            try:
                manager = SessionManager.open_sync(path, repair=repair)
            except TranscriptError:
                continue
            manager.build_session_context()
            manager.build_session_context(materialize=False)
            for entry in manager.get_entries():
                manager.get_branch(entry["id"])


@FUZZ
@given(st.binary(max_size=400))
def test_the_transcript_loader_takes_any_bytes(data: bytes) -> None:
    load_transcript(data)


@FUZZ
@given(session_files())
def test_the_transcript_loader_takes_near_valid_jsonl_with_random_field_types(data: bytes):
    load_transcript(data)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session_files())
def test_a_run_on_a_fuzzed_session_never_raises(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        sessions = Path(folder) / "sessions"
        sessions.mkdir()
        (sessions / "fuzz.jsonl").write_bytes(data)

        async def run() -> None:
            config = {"state_dir": folder, "agent": {"model": "echo/echo"}}
            async with Runtime(config, load_entrypoints=False) as runtime:
                try:
                    result = await runtime.run("hello", session_id="fuzz")
                except TranscriptError:
                    return
                assert result.ok or result.error is not None

        anyio.run(run)


# --------------------------------------------------------------------------- config


def load_config(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "openclaw-runtime.toml"
        path.write_bytes(data)
        with contextlib.suppress(ConfigurationError):
            RuntimeConfig.load(path)


@FUZZ
@given(st.binary(max_size=300))
def test_the_config_loader_takes_any_bytes(data: bytes) -> None:
    load_config(data)


SECTIONS = [
    "",
    "[agent]",
    "[agent.run_retries]",
    "[auth]",
    "[auth.cooldowns]",
    "[[auth.profiles]]",
    "[plugins]",
    "[backends]",
    "[[models]]",
    "[nope]",
]
KEYS = [
    "model",
    "fallbacks",
    "model_aliases",
    "thinking_level",
    "timeout_seconds",
    "idle_timeout_seconds",
    "max_concurrent",
    "context_tokens",
    "keep_recent_tokens",
    "base",
    "per_profile",
    "min",
    "max",
    "id",
    "provider",
    "mode",
    "credential",
    "order",
    "store_path",
    "billing_backoff_minutes",
    "billing_backoff_minutes_by_provider",
    "failure_window_hours",
    "allow",
    "disable",
    "strict",
    "lanes",
    "auth_store",
    "api",
    "contextWindow",
    "baseUrl",
    "state_dir",
    "context_engine",
    "typo_key",
]
toml_scalars = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1).map(str),
    st.sampled_from(["inf", "-inf", "nan", "0.5", "1e400", "true", "false", "1979-05-27"]),
    st.text(max_size=12).map(json.dumps),
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=2).map(
            lambda table: "{" + ", ".join(f"{k} = {v}" for k, v in table.items()) + "}"
        ),
    ),
    max_leaves=6,
)


@st.composite
def toml_documents(draw: st.DrawFn) -> bytes:
    lines: list[str] = []
    for _ in range(draw(st.integers(min_value=1, max_value=5))):
        lines.append(draw(st.sampled_from(SECTIONS)))
        for _ in range(draw(st.integers(min_value=0, max_value=4))):
            lines.append(f"{draw(st.sampled_from(KEYS))} = {draw(toml_values)}")
    return "\n".join(lines).encode()


@FUZZ
@given(toml_documents())
def test_the_config_loader_takes_near_valid_toml(data: bytes) -> None:
    load_config(data)


@pytest.mark.parametrize(
    "nested", ["a = " + "[" * 2000 + "]" * 2000, "a = " + "{b=" * 2000 + "1" + "}" * 2000]
)
def test_deeply_nested_toml_is_a_configuration_error_not_a_recursion_error(tmp_path, nested):
    path = tmp_path / "c.toml"
    path.write_text(nested)
    with pytest.raises(ConfigurationError, match="nested too deeply"):
        RuntimeConfig.load(path)


def test_a_config_with_invalid_utf8_is_a_configuration_error(tmp_path) -> None:
    path = tmp_path / "c.toml"
    path.write_bytes(b'[agent]\nmodel = "ech\xff"\n')
    with pytest.raises(ConfigurationError, match="not UTF-8 text \\(invalid byte at offset 20\\)"):
        RuntimeConfig.load(path)
