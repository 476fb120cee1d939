"""A failure's facts (``FailoverSignal``) from the raw things a provider hands back (spec §1.2).

``coerce_signal`` accepts a signal or OpenClaw's dict; ``extract_failover_signal_details`` pulls
classifier candidates out of raw error bodies; ``signal_from_assistant_message`` builds the
signal of an assistant error response.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._json import MAX_UNTRUSTED_JSON_DEPTH, loads_untrusted
from ..messages import AssistantMessage
from .reasons import FailoverSignal

__all__ = [
    "coerce_signal",
    "extract_failover_signal_details",
    "signal_from_assistant_message",
]

# --------------------------------------------------------------------------- signal facts


def coerce_signal(signal: FailoverSignal | Mapping[str, Any]) -> FailoverSignal:
    if isinstance(signal, FailoverSignal):
        return signal
    if isinstance(signal, Mapping):
        return FailoverSignal.from_mapping(dict(signal))
    raise TypeError(
        f"expected a FailoverSignal or a mapping of its fields, got {type(signal).__name__}"
    )


_MAX_DETAIL_CANDIDATES = 12
_MAX_DETAIL_CHARS = 1_000
_DETAIL_KEYS = ("message", "param", "code", "type", "error", "detail", "body")


def _detail_text(value: object) -> str | None:
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and value.is_integer():
        text = str(int(value))
    elif isinstance(value, str | int | float):
        text = str(value)
    else:
        return None
    text = text.strip()
    return text[:_MAX_DETAIL_CHARS] if text else None


def _collect_details(value: object, out: list[str], seen: set[int], depth: int = 0) -> None:
    # depth-bounded: values handed in by callers need not come from the bounded parser
    if len(out) >= _MAX_DETAIL_CANDIDATES or value is None or depth > MAX_UNTRUSTED_JSON_DEPTH:
        return
    if isinstance(value, str | int | float):
        text = _detail_text(value)
        if text is not None and text not in out:
            out.append(text)
        if isinstance(value, str):
            trimmed = value.strip()
            if trimmed.startswith("{") and trimmed.endswith("}"):
                try:
                    parsed = loads_untrusted(trimmed)
                except ValueError:
                    return
                _collect_details(parsed, out, seen, depth + 1)
        return
    if not isinstance(value, Mapping) or id(value) in seen:
        return
    seen.add(id(value))
    for key in _DETAIL_KEYS:
        _collect_details(value.get(key), out, seen, depth + 1)
        if len(out) >= _MAX_DETAIL_CANDIDATES:
            return


def extract_failover_signal_details(*values: object) -> tuple[str, ...]:
    """Classifier candidates from raw error values: each string, and the ``message``/``code``/
    ``type``/``error``/... fields of JSON bodies, deduplicated (at most 12, 1000 chars each)."""
    out: list[str] = []
    seen: set[int] = set()
    for value in values:
        _collect_details(value, out, seen)
        if len(out) >= _MAX_DETAIL_CANDIDATES:
            break
    return tuple(out)


def signal_from_assistant_message(message: Any) -> FailoverSignal:
    """The ``FailoverSignal`` of an assistant error response (an ``AssistantMessage`` or its
    wire dict): status, code, type, text, retry-after, provider, model; the raw body's fields
    become ``details``."""
    if isinstance(message, Mapping):
        message = AssistantMessage.model_validate(dict(message))
    body = getattr(message, "error_body", None)
    text = getattr(message, "error_message", None)
    details = tuple(
        detail for detail in extract_failover_signal_details(body) if detail != (text or "").strip()
    )
    retry_after = getattr(message, "error_retry_after_ms", None)
    return FailoverSignal(
        status=getattr(message, "error_status", None),
        retry_after_ms=float(retry_after) if retry_after is not None else None,
        code=getattr(message, "error_code", None),
        error_type=getattr(message, "error_type", None),
        message=text,
        provider=getattr(message, "provider", None) or None,
        model=getattr(message, "model", None) or None,
        details=details,
    )
