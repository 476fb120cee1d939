"""One process-wide redactor: credentials never leave the credential store.

Providers echo keys in their errors (OpenAI: ``"Incorrect API key provided: sk-..."``), tools
print environments, exceptions quote headers. Every credential value the runtime resolves (env,
file, inline, OAuth token, a provider key from the environment) is *registered* here for the
life of the process, and every path out of the process — transcript lines, side files, events,
``RunResult``, exceptions, log records, CLI output — passes its text through ``redact``.

What is masked:

* registered values, as they are and as they look inside a JSON string (escaped quotes,
  backslashes, ``\\uXXXX``), replaced by ``***``. Values shorter than ``MIN_SECRET_LENGTH``
  (8) characters are not registered: no real API key or token is that short, and masking a
  short string everywhere would mangle ordinary text (a 3-character "key" would eat words);
* well-known key shapes even when never registered: OpenAI ``sk-…`` (and ``sk-proj-…``),
  Anthropic ``sk-ant-…``, Google ``AIza…``, ``Bearer <token>`` and ``Basic <credential>``
  (the token must contain a digit or one of ``._~+/=`` — or, after ``Bearer``, be 16+
  characters long — so "basic understanding" and "bearer instruments" stay as they are);
* ``redact_diagnostic`` also masks ``api_key=…``/``"token": "…"``/``password: …`` assignments,
  for error and log text only (in conversation text they are too often legitimate words).

Cost: the common case (nothing matches) is a few substring tests for the shapes' hints
(``sk-``, ``AIza``, ``earer``, ``asic``) and one search of one precompiled alternation of the
registered values, rebuilt only when a new secret is registered: a few µs for 2 KB of text.
The shapes' regexes run only on text that holds their hint. Nothing here is called per
streamed delta.

This module imports nothing from the rest of the package, so every layer may use it.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "CREDENTIAL_HEADERS",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "UNCHECKED_EVENT_TYPES",
    "RedactingFilter",
    "SecretMatchers",
    "clear_registered_secrets",
    "contains_secret",
    "package_logger",
    "redact",
    "redact_bytes",
    "redact_data",
    "redact_dataclass",
    "redact_diagnostic",
    "redact_event",
    "redact_json",
    "register_header_secrets",
    "register_secret",
    "registered_secret_count",
    "secret_matchers",
]

#: Values shorter than this are never registered (see the module docstring).
MIN_SECRET_LENGTH = 8
#: What a registered secret becomes.
REDACTED = "***"

# Well-known shapes: (literal hints, pattern, replacement). A shape's regex runs only when one
# of its hints occurs in the text (a plain substring test: far cheaper than trying a regex at
# every position). Token characters never include a quote or a backslash, so masking inside
# serialized JSON keeps it valid.
_TOKEN_CHARS = r"A-Za-z0-9._~+/=\-"
_BEARER_HINTS = ("earer", "EARER")  # Bearer, bearer, BEARER
_BASIC_HINTS = ("asic", "ASIC")  # Basic, basic, BASIC
_SHAPES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("sk-ant-",), r"\bsk-ant-[A-Za-z0-9_\-]{8,}", "sk-ant-***"),
    (("sk-",), r"\bsk-[A-Za-z0-9_\-]{8,}", "sk-***"),
    (("AIza",), r"\bAIza[0-9A-Za-z_\-]{16,}", "AIza***"),
    (
        _BEARER_HINTS,
        rf"(?i:\b(bearer))[ \t]+(?:(?=[{_TOKEN_CHARS}]*[0-9._~+/=])[{_TOKEN_CHARS}]{{8,}}"
        rf"|[{_TOKEN_CHARS}]{{16,}})",
        r"\1 ***",
    ),
    (
        _BASIC_HINTS,
        rf"(?i:\b(basic))[ \t]+(?=[{_TOKEN_CHARS}]*[0-9._~+/=])[{_TOKEN_CHARS}]{{8,}}",
        r"\1 ***",
    ),
)
_HINTS = ("sk-", "AIza", *_BEARER_HINTS, *_BASIC_HINTS)
# the hints of bytes, searched in the ASCII-lowercased line: one ``lower()`` and four searches
# instead of six (each hint's lowercase form is here, so nothing ``_HINTS`` finds is missed;
# what only these find is a false alarm the redaction then leaves unchanged)
_LOWER_HINTS_BYTES = tuple(dict.fromkeys(hint.lower().encode("ascii") for hint in _HINTS))
_ASSIGNMENT = (
    r"(?i:\b((?:x-)?(?:api[_-]?key|access[_-]?token|refresh[_-]?token|token|secret"
    r"|password|authorization)[\"']?\s*[=:]\s*[\"']?))(?!(?i:bearer|basic)\s)[^\s\"',;&}]{6,}"
)
_ASSIGNMENT_HINTS = ("key", "token", "secret", "password", "authorization")
_SHAPE_RES = tuple((hints, re.compile(p), r) for hints, p, r in _SHAPES)
_ASSIGNMENT_RE = re.compile(_ASSIGNMENT)

_lock = threading.Lock()
_secrets: set[str] = set()  # every registered form (raw and JSON-escaped)
_raw_count = 0


class SecretMatchers:
    """The registered secrets, compiled; swapped whole (readers never lock). ``literal`` is
    one alternation of the plain registered values, which the regex engine scans quickly."""

    __slots__ = ("literal", "literal_bytes", "secrets")

    def __init__(self, secrets: Iterable[str]) -> None:
        ordered = sorted(secrets, key=len, reverse=True)
        self.secrets: tuple[str, ...] = tuple(ordered)
        self.literal = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        # serialized JSON is UTF-8: the same alternation over bytes, without a decode
        self.literal_bytes = (
            re.compile(b"|".join(re.escape(s.encode("utf-8")) for s in ordered))
            if ordered
            else None
        )


_matchers = SecretMatchers(())


def _may_match(text: str, matchers: SecretMatchers) -> bool:
    """The fast path: could anything in ``text`` need masking? A few substring tests for
    the shapes' hints (faster than any regex alternation) and one search for the secrets."""
    for hint in _HINTS:
        if hint in text:
            return True
    pattern = matchers.literal
    return pattern is not None and pattern.search(text) is not None


def _forms(value: str) -> set[str]:
    """The value and how it looks inside a JSON string (both ASCII and UTF-8 escaping)."""
    forms = {value}
    for ensure_ascii in (True, False):
        forms.add(json.dumps(value, ensure_ascii=ensure_ascii)[1:-1])
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


def register_secret(value: object) -> None:
    """Mask ``value`` everywhere from now on, for the life of the process.

    Accepts a ``str`` or anything with ``get_secret_value()`` (pydantic ``SecretStr``);
    ``None``, non-strings and values shorter than ``MIN_SECRET_LENGTH`` after stripping are
    ignored. Registering the same value again costs one set lookup.
    """
    global _matchers, _raw_count
    getter = getattr(value, "get_secret_value", None)
    if callable(getter):
        value = getter()
    if not isinstance(value, str):
        return
    value = value.strip()
    if len(value) < MIN_SECRET_LENGTH or value in _secrets:
        return
    with _lock:
        new = _forms(value) - _secrets
        if not new:
            return
        _secrets.update(new)
        _raw_count += 1
        _matchers = SecretMatchers(_secrets)


#: Request headers whose values are credentials (lower-case names).
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key"}
)


def register_header_secrets(headers: Mapping[str, str]) -> None:
    """Register the credential headers' values (only the token after ``Bearer``/``Basic``)."""
    for name, value in headers.items():
        if name.lower() in CREDENTIAL_HEADERS and isinstance(value, str):
            scheme, _, token = value.strip().partition(" ")
            if token and scheme.lower() in ("bearer", "basic", "token"):
                register_secret(token)  # the scheme word stays readable: "Bearer ***"
            else:
                register_secret(value)


def registered_secret_count() -> int:
    """How many distinct values are registered (for ``doctor`` and tests)."""
    return _raw_count


def clear_registered_secrets() -> None:
    """Forget every registered value (tests only; the runtime never forgets)."""
    global _matchers, _raw_count
    with _lock:
        _secrets.clear()
        _raw_count = 0
        _matchers = SecretMatchers(())


def secret_matchers() -> SecretMatchers:
    """The registered secrets as they are now: an opaque snapshot (a registration swaps in a
    new one and never changes it) for ``contains_secret`` and ``redact_data`` to check text
    later exactly as it would have been checked now."""
    return _matchers


def contains_secret(text: str | bytes, matchers: SecretMatchers | None = None) -> bool:
    """Whether ``redact`` would (probably) change ``text``; UTF-8 ``bytes`` are searched as
    they are. A ``True`` may be a false alarm (a hint like "basic" in plain prose); a
    ``False`` is certain. ``matchers``: a ``secret_matchers()`` snapshot instead of now's."""
    if matchers is None:
        matchers = _matchers
    if isinstance(text, bytes):
        lowered = text.lower()  # ASCII letters only: UTF-8 bytes of other letters stay as they are
        for hint in _LOWER_HINTS_BYTES:
            if hint in lowered:
                return True
        pattern = matchers.literal_bytes
        return pattern is not None and pattern.search(text) is not None
    return _may_match(text, matchers)


def _spans(text: str, matchers: SecretMatchers, diagnostic: bool) -> list[tuple[int, int, str]]:
    """Every (start, end, replacement) to mask, overlaps merged (the union is masked)."""
    found: list[tuple[int, int, str]] = []
    for secret in matchers.secrets:
        start = text.find(secret)
        while start != -1:
            found.append((start, start + len(secret), REDACTED))
            start = text.find(secret, start + 1)
    for hints, pattern, replacement in _SHAPE_RES:
        if any(hint in text for hint in hints):
            for match in pattern.finditer(text):
                found.append((match.start(), match.end(), match.expand(replacement)))
    if diagnostic:
        for match in _ASSIGNMENT_RE.finditer(text):
            found.append((match.start(), match.end(), match.group(1) + REDACTED))
    found.sort(key=lambda span: (span[0], -span[1]))
    merged: list[tuple[int, int, str]] = []
    for start, end, replacement in found:
        if merged and start < merged[-1][1]:
            last_start, last_end, last_replacement = merged[-1]
            if end > last_end:
                # overlapping secrets: mask their union, keep the first one's visible prefix
                merged[-1] = (last_start, end, last_replacement)
            continue
        merged.append((start, end, replacement))
    return merged


def _may_assign(text: str) -> bool:
    """Could ``text`` hold a ``key=value`` credential (``redact_diagnostic`` only)?"""
    lowered = text.lower()
    return any(hint in lowered for hint in _ASSIGNMENT_HINTS)


def _redact(text: str, diagnostic: bool, matchers: SecretMatchers | None = None) -> str:
    if matchers is None:
        matchers = _matchers
    if not _may_match(text, matchers) and not (diagnostic and _may_assign(text)):
        return text
    spans = _spans(text, matchers, diagnostic)
    if not spans:
        return text
    out: list[str] = []
    position = 0
    for start, end, replacement in spans:
        out.append(text[position:start])
        out.append(replacement)
        position = end
    out.append(text[position:])
    return "".join(out)


def redact(text: str) -> str:
    """``text`` with registered secrets and well-known key shapes masked.

    Safe for conversation text (prompts, answers, tool results): ordinary words are kept.
    """
    return _redact(text, False)


def redact_diagnostic(text: str) -> str:
    """``redact`` plus ``key=value``-shaped credentials: for errors, logs and events."""
    return _redact(text, True)


def redact_bytes(data: bytes) -> bytes:
    """``redact`` over raw bytes of any encoding (bytes map 1:1 through Latin-1), for copies
    of files whose lines may not be UTF-8."""
    text = data.decode("latin-1")
    redacted = redact(text)
    return data if redacted is text else redacted.encode("latin-1")


def redact_data(
    value: Any, *, diagnostic: bool = False, matchers: SecretMatchers | None = None
) -> Any:
    """A JSON-like value (dicts, lists, tuples, strings) with every string redacted.

    Returns ``value`` itself when nothing changed, so callers can test ``is`` cheaply; other
    objects (numbers, models) are returned as they are. ``matchers``: a ``secret_matchers()``
    snapshot to mask with instead of the secrets registered now.
    """
    if isinstance(value, str):
        return _redact(value, diagnostic, matchers)
    if isinstance(value, dict):
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new_key = _redact(key, diagnostic, matchers) if isinstance(key, str) else key
            new_item = redact_data(item, diagnostic=diagnostic, matchers=matchers)
            changed = changed or new_key is not key or new_item is not item
            out[new_key] = new_item
        return out if changed else value
    if isinstance(value, list | tuple):
        items = [redact_data(item, diagnostic=diagnostic, matchers=matchers) for item in value]
        if all(new is old for new, old in zip(items, value, strict=True)):
            return value
        return type(value)(items) if isinstance(value, tuple) else items
    return value


_DATA_FIELDS: dict[type, tuple[str, ...]] = {}


def _init_fields(cls: type) -> tuple[str, ...]:
    names = _DATA_FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls) if f.init)
        _DATA_FIELDS[cls] = names
    return names


def _collect_strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str):
                out.append(key)
            _collect_strings(item, out)
    elif isinstance(value, list | tuple):
        for item in value:
            _collect_strings(item, out)


def redact_json(
    document: bytes, *, option: int | None = None, matchers: SecretMatchers | None = None
) -> bytes:
    """``document`` (JSON that ``orjson.dumps(value, option=option)`` wrote) written again
    with every string in it redacted (``redact_data``; ``matchers`` as there).

    It is read back rather than redacted from ``value``: orjson also writes dataclasses,
    UUIDs, enums and datetimes natively, which ``redact_data`` does not walk, so a secret in
    one of them would have been written as it was. Read back, they are plain JSON values, and
    nothing else changes (orjson reads its own floats and 64-bit integers back exactly).
    """
    import orjson  # here: the package's import does not load orjson, and this path is rare

    redacted = redact_data(orjson.loads(document), matchers=matchers)
    return orjson.dumps(redacted, option=option)


def redact_dataclass(obj: Any, *, diagnostic: bool = True) -> Any:
    """A dataclass instance (an event) with its string, dict and list fields redacted.

    Returns ``obj`` itself when nothing changed, else a copy (``dataclasses.replace``); fields
    holding other objects (messages, nested events) are left to their own producers. Every
    string of the instance is checked in one search first, so a clean event costs one
    regex search over its joined text.
    """
    cls = type(obj)
    if isinstance(obj, type) or not dataclasses.is_dataclass(cls):
        return obj
    names = _init_fields(cls)
    strings: list[str] = []
    for name in names:
        _collect_strings(getattr(obj, name), strings)
    if not strings:
        return obj
    joined = "\x00".join(strings)
    if not _may_match(joined, _matchers) and not (diagnostic and _may_assign(joined)):
        return obj
    changes: dict[str, Any] = {}
    for name in names:
        value = getattr(obj, name)
        if isinstance(value, str | dict | list | tuple):
            redacted = redact_data(value, diagnostic=diagnostic)
            if redacted is not value:
                changes[name] = redacted
    return dataclasses.replace(obj, **changes) if changes else obj


#: Event types never walked: those sent once per streamed delta (their error texts are masked
#: where provider failures enter, so redaction adds no per-delta work) and those whose fields
#: are only ids, names, numbers and messages (messages are masked where their text enters:
#: provider failures, tool results). Every other event type is checked, new ones included.
UNCHECKED_EVENT_TYPES = frozenset(
    {
        *("message_update", "text_delta", "thinking_delta", "toolcall_delta"),
        *("agent_start", "turn_start", "message_start", "message_end", "turn_end"),
        *("agent_end", "lane_wait", "lane_acquired", "run_start"),
        *("fallback_attempt_start", "fallback_succeeded"),
    }
)


def redact_event(event: Any) -> Any:
    """An event (a dataclass with a ``type``) with its text fields redacted, unless its type
    is in ``UNCHECKED_EVENT_TYPES``; itself when nothing changed."""
    if getattr(event, "type", None) in UNCHECKED_EVENT_TYPES:
        return event
    return redact_dataclass(event)


class RedactingFilter(logging.Filter):
    """Masks secrets in a log record's message, arguments and exception text.

    A filter on a parent logger does not see records created by child loggers, so the
    package attaches one instance to *each* of its loggers through ``package_logger``.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to logging to report
            return True
        redacted = redact_diagnostic(message)
        if redacted is not message:
            record.msg, record.args = redacted, None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            masked = redact_diagnostic(text)
            if masked is not text:
                record.exc_text = masked
        elif record.exc_text:
            record.exc_text = redact_diagnostic(record.exc_text)
        if record.stack_info:
            record.stack_info = redact_diagnostic(record.stack_info)
        return True


_FILTER = RedactingFilter()


def package_logger(logger: logging.Logger | str) -> logging.Logger:
    """``logger`` (or ``logging.getLogger(name)``) with the redacting filter attached (once).

    Every module of the package builds its logger with it:
    ``logger = package_logger(logging.getLogger("openclaw_runtime.x"))``.
    """
    if isinstance(logger, str):
        logger = logging.getLogger(logger)
    if _FILTER not in logger.filters:
        logger.addFilter(_FILTER)
    return logger
