"""The process-wide redactor (``openclaw_runtime.redaction``) and each sink it guards.

Tables for the policy (registered values, well-known shapes, overlaps, JSON escapes, ordinary
text left alone, the minimum length), then one test per sink: transcript lines, ``.bak``
copies and kept-aside lines, log records of child loggers, exceptions, run events, results,
credential resolution and ``sessions show`` of a transcript written before redaction existed.
"""

from __future__ import annotations

import importlib
import json
import logging
import pkgutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

import openclaw_runtime
from openclaw_runtime import ConfigurationError, redaction
from openclaw_runtime.agent.tools import AgentToolResult, redact_tool_result
from openclaw_runtime.auth.profiles import AuthProfile, CredentialRef
from openclaw_runtime.cli import cli
from openclaw_runtime.failover.events import redact_secret_text
from openclaw_runtime.messages import TextContent
from openclaw_runtime.providers.errors import ProviderFailure, failure_from_http
from openclaw_runtime.providers.keys import resolve_env_api_key
from openclaw_runtime.redaction import (
    MIN_SECRET_LENGTH,
    contains_secret,
    redact,
    redact_bytes,
    redact_data,
    redact_dataclass,
    redact_diagnostic,
    register_header_secrets,
    register_secret,
)
from openclaw_runtime.runner.reply_payload import ReplyPayload
from openclaw_runtime.runner.request import RunErrorInfo
from openclaw_runtime.transcript.jsonl import encode_record, keep_invalid_lines, parse_session_bytes
from openclaw_runtime.transcript.repair import plan_session_repair, write_repair

KEY = "reg1stered-Key-aZ09-abcdefgh"
QUOTED = 'q"uo\\ted-secret-value-42'
UNICODE = "clé-secrète-ünïcode-42"
OVERLAP_A = "overlapAAAA1234"
OVERLAP_B = "1234BBBBoverlap"


@pytest.fixture(autouse=True)
def registered() -> None:
    for value in (KEY, QUOTED, UNICODE, OVERLAP_A, OVERLAP_B):
        register_secret(value)


# --------------------------------------------------------------------------- the policy

REDACT_CASES: list[tuple[str, str, str]] = [
    ("registered value", f"key={KEY}!", "key=***!"),
    ("registered twice", f"{KEY} and {KEY}", "*** and ***"),
    ("registered inside words", f"x{KEY}y", "x***y"),
    ("registered inside a JSON string", json.dumps({"m": f"bad {QUOTED}"}), '{"m": "bad ***"}'),
    (
        "registered, JSON with \\u escapes",
        json.dumps({"m": UNICODE}),  # ensure_ascii: \u00e9...
        '{"m": "***"}',
    ),
    ("registered, raw unicode", f"[{UNICODE}]", "[***]"),
    ("overlapping secrets: the union goes", "xx overlapAAAA1234BBBBoverlap yy", "xx *** yy"),
    (
        "openai key",
        "Incorrect API key provided: sk-proj-abc123DEF456ghi789.",
        "Incorrect API key provided: sk-***.",
    ),
    ("legacy openai key", "sk-" + "A1" * 24, "sk-***"),
    ("anthropic key", "key sk-ant-api03-" + "x9" * 40 + " end", "key sk-ant-*** end"),
    ("google key", "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStU", "AIza***"),
    (
        "bearer header",
        "Authorization: Bearer abcdefghijklmnopqrstuv failed",
        "Authorization: Bearer *** failed",
    ),
    ("lower-case bearer", "bearer eyJhbGciOiJIUzI1NiJ9.e30.sig", "bearer ***"),
    ("basic credential", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic ***"),
    # ordinary text is left alone
    (
        "basic english",
        "a basic understanding of bearer instruments",
        "a basic understanding of bearer instruments",
    ),
    ("sk- in prose", "the sk-learn docs and task-runner", "the sk-learn docs and task-runner"),
    ("assignments are only masked in diagnostics", "password: hunter22", "password: hunter22"),
    ("empty", "", ""),
]


@pytest.mark.parametrize(
    ("case", "text", "expected"), REDACT_CASES, ids=[c[0] for c in REDACT_CASES]
)
def test_redact(case: str, text: str, expected: str) -> None:
    assert redact(text) == expected


DIAGNOSTIC_CASES: list[tuple[str, str]] = [
    ("api_key=abcdef123456&x=1", "api_key=***&x=1"),
    ('{"access_token": "tok-123456789"}', '{"access_token": "***"}'),
    ("password: hunter22", "password: ***"),
    ("Authorization: Bearer tok-1234567890", "Authorization: Bearer ***"),
    (f"401 {KEY}", "401 ***"),
    ("nothing secret here", "nothing secret here"),
]


@pytest.mark.parametrize(("text", "expected"), DIAGNOSTIC_CASES)
def test_redact_diagnostic(text: str, expected: str) -> None:
    assert redact_diagnostic(text) == expected


def test_short_values_are_not_registered() -> None:
    short = "Ab3" * 2 + "x"  # 7 characters
    assert len(short) < MIN_SECRET_LENGTH
    register_secret(short)
    register_secret("   ")
    register_secret(None)
    register_secret(12345678)
    assert redact(f"word {short} word") == f"word {short} word"


def test_secret_str_and_surrounding_whitespace_register_the_value() -> None:
    register_secret(SecretStr("  from-a-SecretStr-0042  "))
    assert redact("x from-a-SecretStr-0042 y") == "x *** y"


def test_nothing_to_mask_returns_the_same_object() -> None:
    text = "an ordinary sentence, long enough to be scanned " * 20
    assert redact(text) is text
    data = {"a": [text, {"b": text}], "n": 3}
    assert redact_data(data) is data
    raw = text.encode()
    assert redact_bytes(raw) is raw
    assert contains_secret(raw) is False and contains_secret(text) is False


def test_redact_data_walks_dicts_lists_and_keys() -> None:
    data = {"error": {"message": f"bad {KEY}", "list": [KEY, 1, None]}, KEY: "k", "ok": "fine"}
    assert redact_data(data) == {
        "error": {"message": "bad ***", "list": ["***", 1, None]},
        "***": "k",
        "ok": "fine",
    }
    assert KEY in json.dumps(data)  # the input is never changed in place


def test_redact_bytes_masks_non_utf8_content() -> None:
    raw = b"\xff\xfe " + KEY.encode() + b" \x80"
    assert redact_bytes(raw) == b"\xff\xfe *** \x80"


def test_header_values_and_their_tokens_are_registered() -> None:
    register_header_secrets(
        {
            "Authorization": "Bearer hdr-token-77aa88bb",
            "x-api-key": "xkey-1234567890",
            "accept": "text/plain-long-value",
        }
    )
    assert redact("hdr-token-77aa88bb / xkey-1234567890") == "*** / ***"
    assert redact("text/plain-long-value") == "text/plain-long-value"


def test_display_scrubber_is_the_same_redactor_with_a_limit() -> None:
    text = f"{KEY} " + "x" * 2000
    out = redact_secret_text(text)
    assert out.startswith("*** ") and len(out) == 1000


@dataclass
class _Event:
    message: str
    data: dict[str, Any]
    count: int = 0


def test_redact_dataclass_copies_only_when_needed() -> None:
    clean = _Event("fine", {"a": "b"})
    assert redact_dataclass(clean) is clean
    dirty = _Event(f"x {KEY}", {"k": KEY}, 2)
    out = redact_dataclass(dirty)
    assert out == _Event("x ***", {"k": "***"}, 2)
    assert dirty.message == f"x {KEY}"


# --------------------------------------------------------------------------- registration


def test_credential_resolution_registers_env_file_and_inline_values(tmp_path: Path) -> None:
    env_value = "env-credential-5151aa"
    file_value = "file-credential-6262bb"
    inline_value = "inline-credential-7373cc"
    (tmp_path / "key").write_text(file_value + "\n")
    for text in (env_value, file_value, inline_value):
        assert redact(text) == text  # not known yet
    CredentialRef(value=inline_value)  # inline: known once configured
    assert redact(inline_value) == "***"
    CredentialRef(env="X_KEY").resolve({"X_KEY": env_value})
    CredentialRef(file=tmp_path / "key").resolve()
    assert redact(f"{env_value} {file_value}") == "*** ***"


def test_openclaw_store_profiles_and_env_provider_keys_are_registered() -> None:
    oauth = AuthProfile.from_openclaw(
        "openai:me",
        {
            "type": "oauth",
            "provider": "openai",
            "access": "acc-tok-919191",
            "refresh": "ref-tok-828282",
        },
    )
    assert oauth.credential is not None
    assert redact("acc-tok-919191 ref-tok-828282") == "*** ***"
    assert resolve_env_api_key("srvx", {"SRVX_API_KEY": "envkey-454545"}) == "envkey-454545"
    assert redact("envkey-454545") == "***"


# --------------------------------------------------------------------------- sources


def test_provider_failures_are_masked_where_they_enter() -> None:
    body = orjson.dumps(
        {"error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}}
    )
    failure = failure_from_http(401, {}, body)
    assert KEY not in repr(failure)
    assert failure.message == "401 Incorrect API key provided: ***"
    assert failure.code == "invalid_api_key"  # still classifiable
    assert ProviderFailure(f"Connection error: {KEY}").message == "Connection error: ***"


def test_a_body_cut_at_the_cap_never_keeps_half_a_key() -> None:
    from openclaw_runtime.providers.errors import MAX_ERROR_BODY_CHARS

    text = "x" * (MAX_ERROR_BODY_CHARS - 10) + KEY
    failure = failure_from_http(500, {}, text.encode())
    assert failure.body is not None and KEY[:10] not in failure.body


def test_tool_results_are_masked() -> None:
    result = AgentToolResult(content=[TextContent(text=f"KEY={KEY}")], details={"env": {"K": KEY}})
    out = redact_tool_result(result)
    assert out.content[0].text == "KEY=***" and out.details == {"env": {"K": "***"}}
    clean = AgentToolResult(content=[TextContent(text="fine")])
    assert redact_tool_result(clean) is clean


def test_exceptions_results_and_payloads_never_hold_a_secret() -> None:
    exc = ConfigurationError(f"bad value {KEY}")
    assert KEY not in str(exc) and KEY not in repr(exc)
    assert KEY not in RunErrorInfo("provider", f"401 {KEY}").message
    assert ReplyPayload(text=f"⚠️ {KEY}", is_error=True).text == "⚠️ ***"


# --------------------------------------------------------------------------- sinks


def test_transcript_lines_are_masked_and_stay_valid_json() -> None:
    entry = {
        "type": "message",
        "message": {"role": "user", "content": [{"type": "text", "text": f'a "{QUOTED}" b'}]},
    }
    line = encode_record(entry)
    assert QUOTED.encode() not in line and json.dumps(QUOTED)[1:-1].encode() not in line
    assert orjson.loads(line)["message"]["content"][0]["text"] == 'a "***" b'
    plain = {"type": "message", "message": {"role": "user", "content": "hello"}}
    assert encode_record(plain) == orjson.dumps(plain) + b"\n"


def test_repair_backup_and_kept_aside_lines_are_masked(tmp_path: Path) -> None:
    session = tmp_path / "s.jsonl"
    header = {
        "type": "session",
        "version": 3,
        "id": "s",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/",
    }
    good = {
        "type": "message",
        "id": "a1",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": f"legacy {KEY}", "timestamp": 1},
    }
    # a transcript written before redaction existed, with one unreadable line
    data = orjson.dumps(header) + b"\n" + orjson.dumps(good) + b"\n" + f"{{broken {KEY}\n".encode()
    session.write_bytes(data)
    parsed = parse_session_bytes(session.read_bytes())
    plan = plan_session_repair(parsed)
    backup, side = write_repair(session, parsed, plan, now_ms=1, kept_at="2026-01-01T00:00:00.000Z")
    for path in (Path(backup), session, *([Path(side)] if side else [])):
        assert KEY.encode() not in path.read_bytes(), path.name
    kept = tmp_path / "other.jsonl"
    keep_invalid_lines(kept, parsed.invalid, kept_at="now")
    assert all(KEY.encode() not in p.read_bytes() for p in tmp_path.iterdir())


def _package_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(openclaw_runtime.__path__, "openclaw_runtime."):
        if ".testing" in info.name or info.name.endswith("__main__"):
            continue
        names.append(info.name)
    return names


def test_every_package_logger_redacts_even_when_records_propagate(
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name in _package_modules():
        importlib.import_module(name)
    loggers = [
        logging.getLogger(name)
        for name in logging.root.manager.loggerDict
        if name == "openclaw_runtime" or name.startswith("openclaw_runtime.")
    ]
    missing = [
        lg.name
        for lg in loggers
        if not any(isinstance(f, redaction.RedactingFilter) for f in lg.filters)
    ]
    # every logger the package logs through is built with package_logger()
    assert [m for m in missing if _logs_through(m)] == []
    child = logging.getLogger("openclaw_runtime.runner")
    caplog.set_level(logging.DEBUG)
    try:
        raise RuntimeError(f"boom {KEY}")
    except RuntimeError:
        child.warning("failed with key=%s and %s", KEY, "sk-proj-abcdef0123456789", exc_info=True)
    assert KEY not in caplog.text and "sk-proj-abcdef0123456789" not in caplog.text
    assert "failed with key=***" in caplog.text


def _logs_through(name: str) -> bool:
    """Whether a module of the package holds this logger as its module-level ``logger``."""
    for module_name in _package_modules():
        module = importlib.import_module(module_name)
        logger = getattr(module, "logger", None)
        if isinstance(logger, logging.Logger) and logger.name == name:
            return True
    return False


def test_sessions_show_masks_a_transcript_written_before_redaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = tmp_path / "state"
    sessions = state / "sessions"
    sessions.mkdir(parents=True)
    legacy = "sk-legacy-" + "Zz9" * 10
    header = {
        "type": "session",
        "version": 3,
        "id": "old",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": "/",
    }
    entry = {
        "type": "message",
        "id": "e1",
        "parentId": None,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {
            "role": "assistant",
            "content": [],
            "stopReason": "error",
            "errorMessage": f"401 Incorrect API key provided: {legacy}",
            "api": "openai-completions",
            "provider": "srv",
            "model": "m1",
            "usage": {
                "input": 0,
                "output": 0,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 0,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
            "timestamp": 1,
        },
    }
    (sessions / "old.jsonl").write_bytes(orjson.dumps(header) + b"\n" + orjson.dumps(entry) + b"\n")
    monkeypatch.setenv("OPENCLAW_RUNTIME_STATE_DIR", str(state))
    monkeypatch.setenv("OPENCLAW_RUNTIME_PLUGINS", "")
    monkeypatch.chdir(tmp_path)
    for args in (["sessions", "show", "old"], ["sessions", "show", "--json", "--all", "old"]):
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        assert legacy not in result.output
        assert "sk-***" in result.output


def test_public_api_exports_register_secret_and_redact() -> None:
    assert openclaw_runtime.register_secret is register_secret
    assert openclaw_runtime.redact is redact


@pytest.mark.anyio
async def test_the_steering_queue_file_never_holds_a_secret(tmp_path: Path) -> None:
    from openclaw_runtime.runner.steering import SubagentRunRecord, upsert_subagent_run
    from openclaw_runtime.runner.steering_store import JsonFileSteeringStore

    store = JsonFileSteeringStore(tmp_path / "steering" / "runs.json")
    record = SubagentRunRecord.completed(
        run_id="run-1",
        requester_session_key="agent:main:main",
        created_at=1_000,
        ended_at=2_000,
        task="print the environment",
        result_text=f"OPENAI_API_KEY={KEY}",
    )
    await upsert_subagent_run(store, record)
    assert KEY.encode() not in (tmp_path / "steering" / "runs.json").read_bytes()
    loaded = await store.load()
    assert "OPENAI_API_KEY=***" in json.dumps(loaded["run-1"].model_dump(mode="json"))


@pytest.fixture
def scratch_registry() -> Iterator[None]:
    """Random values registered by a property test must not mask text in later tests."""
    saved = (set(redaction._secrets), redaction._raw_count, redaction._matchers)
    yield
    with redaction._lock:
        redaction._secrets.clear()
        redaction._secrets.update(saved[0])
        redaction._raw_count, redaction._matchers = saved[1], saved[2]


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    before=st.text(max_size=40),
    after=st.text(max_size=40),
    secret=st.text(
        alphabet=st.characters(blacklist_categories=("Cs",)),
        min_size=MIN_SECRET_LENGTH,
        max_size=30,
    ).filter(lambda s: s.strip() == s and len(s) >= MIN_SECRET_LENGTH),
)
def test_a_registered_secret_never_survives_in_text_or_json(
    scratch_registry: None, before: str, after: str, secret: str
) -> None:
    register_secret(secret)
    text = before + secret + after
    assert secret not in redact(text)
    assert secret not in redact_diagnostic(text)
    record = {"type": "message", "text": text, "nested": [{"k": text}]}
    line = encode_record(record)
    decoded = orjson.loads(line)  # still valid JSON
    assert secret not in json.dumps(decoded, ensure_ascii=False)
    assert secret.encode() not in line
