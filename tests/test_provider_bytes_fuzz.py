"""Fuzz (hypothesis) of every parser a provider's bytes reach before a run decides anything.

* the SSE decoder: any bytes, cut into chunks at any points, decode exactly like the same
  bytes in one piece, and nothing raises;
* provider error parsing (``failure_from_http``, ``failure_from_payload``): any status, any
  headers, any body (JSON of any shape, nested thousands of levels deep, text, random bytes)
  gives a ``ProviderFailure`` whose message starts with the status and whose retry-after is
  a finite, non-negative number or absent;
* the failure classifiers (core's and each first-party provider's ``classify_failover``, the
  signal builder, the error-body parsers): any message, body, status, code and type gives a
  classification or None;
* the bounded JSON parser every one of them uses raises nothing but ``UntrustedJSONError``.

No exception other than the documented ones is allowed; counts are modest for CI time.
"""

from __future__ import annotations

import importlib
import itertools
import math
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openclaw_runtime._json import (
    MAX_UNTRUSTED_JSON_DEPTH,
    UntrustedJSONError,
    json_depth_exceeds,
    loads_untrusted,
)
from openclaw_runtime.builtins.failover import classify_failover as core_classify
from openclaw_runtime.failover import FailoverClassification, FailoverSignal
from openclaw_runtime.failover.api_errors import parse_api_error_info
from openclaw_runtime.failover.classify import classify_failover_reason
from openclaw_runtime.failover.result_classifier import is_silent_reply_payload_text
from openclaw_runtime.failover.signals import (
    extract_failover_signal_details,
    signal_from_assistant_message,
)
from openclaw_runtime.messages import AssistantMessage
from openclaw_runtime.providers.errors import (
    MAX_ERROR_BODY_CHARS,
    ProviderFailure,
    failure_from_http,
    failure_from_payload,
)
from openclaw_runtime.providers.sse import SSEDecoder, SSEEvent

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --------------------------------------------------------------------------- strategies

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=40),
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=24,
)
ERROR_KEYS = ("message", "type", "code", "status", "param", "detail", "details", "error")
error_objects = st.fixed_dictionaries(
    {},
    optional={
        key: st.one_of(json_values, st.sampled_from(["rate_limit_exceeded", "server_error", "429"]))
        for key in ERROR_KEYS
    },
)
error_bodies = st.one_of(
    error_objects,
    st.builds(lambda inner: {"error": inner}, error_objects),
    st.builds(lambda inner: {"error": inner, "type": "error"}, st.text(max_size=40)),
    json_values,
)


def _deep_text(depth: int, opener: str, closer: str, core: str) -> str:
    return opener * depth + core + closer * depth


deep_bodies = st.builds(
    _deep_text,
    st.integers(min_value=1, max_value=3_000),
    st.sampled_from(['{"error":', '{"a":', "[", '{"error":{"message":"x","details":']),
    st.sampled_from(["}", "]", "}}"]),
    st.sampled_from(['"x"', "1", "[]", "{}"]),
)
body_texts = st.one_of(
    error_bodies.map(lambda value: orjson.dumps(value).decode()),
    deep_bodies,
    st.text(max_size=200),
    st.sampled_from(
        [
            "<html><body>502 Bad Gateway</body></html>",
            '{"error": {"message": "Rate limit reached", "type": "requests"}}',
            '429 {"error":{"message":"slow down","code":"rate_limit_exceeded"}}',
            "Error: 400 " + "[" * 2000,
            '{"detail": "NaN"}',
            '{"x": NaN}',
            '"\\ud800"',
        ]
    ),
)
bodies = st.one_of(body_texts.map(str.encode), st.binary(max_size=300))
header_names = st.sampled_from(
    ["retry-after", "retry-after-ms", "Retry-After", "content-type", "x-request-id"]
)
header_values = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        ["1e400", "inf", "-inf", "nan", "-5", "9" * 400, "Wed, 21 Oct 2015 07:28:00 GMT"]
    ),
    st.floats().map(repr),
)
headers = st.dictionaries(header_names, header_values, max_size=3)
statuses = st.one_of(st.integers(min_value=100, max_value=599), st.integers())

# --------------------------------------------------------------------------- SSE decoder

SSE_TOKENS = [
    b"data:",
    b"data: ",
    b"event: ",
    b"id: ",
    b"id",
    b"retry: 10",
    b":",
    b": ping",
    b" ",
    b"\n",
    b"\r",
    b"\r\n",
    b"\n\n",
    b"{}",
    b'{"a":1}',
    b"[DONE]",
    b"x",
    b"\xc3\xa9",
    b"\xff",
    b"\x00",
]
sse_streams = st.one_of(
    st.lists(st.sampled_from(SSE_TOKENS), max_size=60).map(b"".join),
    st.binary(max_size=300),
)


def decode(chunks: list[bytes]) -> list[SSEEvent]:
    decoder = SSEDecoder()
    events: list[SSEEvent] = []
    for chunk in chunks:
        events.extend(decoder.feed(chunk))
    events.extend(decoder.close())
    return events


@FUZZ
@given(raw=sse_streams, data=st.data())
def test_sse_decoding_does_not_depend_on_where_the_bytes_were_cut(raw: bytes, data: Any) -> None:
    cuts = sorted(
        data.draw(st.lists(st.integers(min_value=0, max_value=len(raw)), max_size=12), "cuts")
    )
    bounds = [0, *cuts, len(raw)]
    chunks = [raw[start:end] for start, end in itertools.pairwise(bounds)]
    whole = decode([raw])
    assert decode(chunks) == whole
    # byte by byte, the hardest split of all
    assert decode([raw[i : i + 1] for i in range(len(raw))]) == whole
    for event in whole:
        assert isinstance(event.data, bytes) and isinstance(event.text, str)


def test_sse_decoder_examples() -> None:
    # anchors for the property: what the joined decoding is, on known inputs
    assert decode([b"data: a\r\n\r\ndata: b\n\n"]) == [SSEEvent(b"a"), SSEEvent(b"b")]
    assert decode([b"data: a\r", b"\n\r", b"\n"]) == [SSEEvent(b"a")]
    assert decode([b"event: e\ndata: x\ndata: y\nid: 7\n\n"]) == [SSEEvent(b"x\ny", "e", "7")]
    assert decode([b": ping\n\ndata: tail"]) == [SSEEvent(b"tail")]


# --------------------------------------------------------------------------- provider errors


@FUZZ
@given(status=statuses, head=headers, body=bodies)
def test_failure_from_http_takes_any_response(
    status: int, head: dict[str, str], body: bytes
) -> None:
    failure = failure_from_http(status, head, body, now_ms=1_700_000_000_000.0)
    assert isinstance(failure, ProviderFailure)
    assert failure.status == status
    assert failure.message.startswith(f"{status} ")
    assert failure.body is None or len(failure.body) <= MAX_ERROR_BODY_CHARS
    assert failure.code is None or isinstance(failure.code, str)
    assert failure.error_type is None or isinstance(failure.error_type, str)
    retry = failure.retry_after_ms
    assert retry is None or (math.isfinite(retry) and retry >= 0), retry


@FUZZ
@given(
    payload=st.one_of(
        error_bodies,
        deep_bodies.map(lambda text: loads_or_none(text)),
    ),
    status=st.one_of(st.none(), st.integers(min_value=400, max_value=599)),
)
def test_failure_from_payload_takes_any_stream_error(payload: Any, status: int | None) -> None:
    failure = failure_from_payload(payload, status=status)
    assert isinstance(failure, ProviderFailure) and isinstance(failure.message, str)
    assert failure.body is not None and len(failure.body) <= MAX_ERROR_BODY_CHARS
    retry = failure.retry_after_ms
    assert retry is None or (math.isfinite(retry) and retry >= 0), retry


def loads_or_none(text: str) -> Any:
    """What a provider's stream parser would hand on (orjson parses up to 1,024 levels)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


# --------------------------------------------------------------------------- classifiers


def _plugin_classifiers() -> dict[str, Any]:
    """The installed provider plugins' classifiers (none in tox's core-only env)."""
    out: dict[str, Any] = {}
    for name in ("openai", "anthropic", "google"):
        try:
            module = importlib.import_module(f"openclaw_runtime_{name}.plugin")
        except ModuleNotFoundError:
            continue
        out[name] = module.classify_failover
    return out


CLASSIFIERS = {"core": core_classify, **_plugin_classifiers()}
texts = st.one_of(st.none(), body_texts, st.text(max_size=60))
signals = st.builds(
    FailoverSignal,
    status=st.one_of(st.none(), statuses),
    retry_after_ms=st.one_of(st.none(), st.floats()),
    code=texts,
    error_type=texts,
    message=texts,
    provider=st.sampled_from([None, "openai", "anthropic", "google", "ollama", "openrouter", ""]),
    model=st.one_of(st.none(), st.text(max_size=20)),
    details=st.lists(body_texts, max_size=3).map(tuple),
)


@FUZZ
@given(signal=signals)
@pytest.mark.parametrize("name", sorted(CLASSIFIERS))
def test_classifiers_take_any_signal(name: str, signal: FailoverSignal) -> None:
    result = CLASSIFIERS[name](signal)
    assert result is None or isinstance(result, FailoverClassification)


@FUZZ
@given(
    message=st.one_of(st.none(), body_texts),
    body=st.one_of(st.none(), body_texts),
    status=st.one_of(st.none(), statuses),
    code=st.one_of(st.none(), st.text(max_size=30)),
    error_type=st.one_of(st.none(), st.text(max_size=30)),
    retry=st.one_of(st.none(), st.floats(allow_nan=False)),
)
def test_signal_from_any_error_message_classifies(
    message: str | None,
    body: str | None,
    status: int | None,
    code: str | None,
    error_type: str | None,
    retry: float | None,
) -> None:
    assistant = AssistantMessage(
        stop_reason="error",
        provider="openai",
        model="gpt-x",
        error_message=message,
        error_body=body,
        error_status=status,
        error_code=code,
        error_type=error_type,
        error_retry_after_ms=retry,
    )
    signal = signal_from_assistant_message(assistant)
    assert isinstance(signal, FailoverSignal)
    assert all(isinstance(detail, str) for detail in signal.details)
    for classify in CLASSIFIERS.values():
        result = classify(signal)
        assert result is None or isinstance(result, FailoverClassification)


@FUZZ
@given(text=body_texts)
def test_error_text_parsers_take_any_text(text: str) -> None:
    classify_failover_reason(text)
    info = parse_api_error_info(text)
    assert info is None or info.message is None or isinstance(info.message, str)
    details = extract_failover_signal_details(text, {"error": text})
    assert len(details) <= 12
    is_silent_reply_payload_text(text)


def test_detail_walk_is_bounded_for_values_built_in_python() -> None:
    # not every caller hands in parsed JSON: a mapping 5,000 levels deep built in Python
    deep: dict[str, Any] = {"message": "bottom"}
    for _ in range(5_000):
        deep = {"error": deep}
    assert extract_failover_signal_details(deep) == ()


# --------------------------------------------------------------------------- the bounded parser


@FUZZ
@given(data=st.one_of(body_texts, st.binary(max_size=200), st.text(max_size=50)))
def test_untrusted_json_raises_only_its_documented_error(data: str | bytes) -> None:
    try:
        value = loads_untrusted(data)
    except UntrustedJSONError:
        return
    assert not json_depth_exceeds(value, MAX_UNTRUSTED_JSON_DEPTH)
    orjson.dumps(value)  # whatever it returns can be serialized again


@pytest.mark.parametrize(
    ("model_id", "retired"),
    [
        ("llama3:8b", True),
        ("org/" + "m" * 252, True),
        ("m" * 257, False),  # longer than any real model id: no longer recognised
        ("x-" * 8_000, False),
    ],
)
def test_retired_model_rule_is_bounded_but_still_matches(model_id: str, retired: bool) -> None:
    # the rule's model-id run is bounded ({0,255}): a 16 kB run of id characters took 1.8 s
    # per classification with an unbounded ``*`` (quadratic backtracking)
    suffix = " was retired at 2026-01-01 00:00:00 +0000 UTC (ref: x)" if retired else ""
    result = core_classify(FailoverSignal(message=model_id + suffix))
    assert (result is not None and result.reason == "model_not_found") is retired
