"""Text helpers of the failure classifier: JavaScript regexes and OpenClaw's lower-casing.

OpenClaw's regexes are JavaScript regexes. ``js_regex`` compiles them with JavaScript's
meaning of ``\\b``/``\\w``/``\\d`` (ASCII), ``\\s`` (Unicode spaces), ``.`` (no line
terminators) and ``$`` (end of input only), so odd corners match the same way.
``matches_error_patterns`` tests a table of ``patterns`` against a message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TypeAlias

__all__ = [
    "ErrorPattern",
    "js_regex",
    "matches_error_patterns",
    "normalize_lower",
    "normalize_optional_lower",
]

ErrorPattern: TypeAlias = "re.Pattern[str] | str"

# --------------------------------------------------------------------------- JS regex semantics

_JS_SPACE = (
    "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff"
)
_JS_LINE_TERMINATORS = "\\n\\r\\u2028\\u2029"


def js_regex(source: str, flags: str = "") -> re.Pattern[str]:
    """Compile a JavaScript regex source so it matches exactly what JavaScript matches.

    ``flags`` takes JavaScript flag letters; only ``i`` is meaningful here.
    """
    out: list[str] = []
    in_class = False
    index = 0
    while index < len(source):
        char = source[index]
        if char == "\\" and index + 1 < len(source):
            escaped = source[index + 1]
            if escaped == "s":
                out.append(_JS_SPACE if in_class else f"[{_JS_SPACE}]")
            elif escaped == "S" and not in_class:
                out.append(f"[^{_JS_SPACE}]")
            else:
                out.append(char + escaped)
            index += 2
            continue
        if in_class:
            in_class = char != "]"
            out.append(char)
        elif char == "[":
            in_class = True
            out.append(char)
        elif char == ".":
            out.append(f"[^{_JS_LINE_TERMINATORS}]")
        elif char == "$":
            out.append(r"\Z")
        else:
            out.append(char)
        index += 1
    bits = re.ASCII | (re.IGNORECASE if "i" in flags else 0)
    return re.compile("".join(out), bits)


def normalize_lower(value: object) -> str:
    """OpenClaw's ``normalizeLowercaseStringOrEmpty``: trimmed lower-case text, or ``""``."""
    return value.strip().lower() if isinstance(value, str) else ""


def normalize_optional_lower(value: object) -> str | None:
    """OpenClaw's ``normalizeOptionalLowercaseString``: trimmed lower-case text, or None."""
    text = normalize_lower(value)
    return text or None


def matches_error_patterns(raw: str | None, patterns: Iterable[ErrorPattern]) -> bool:
    """True when any pattern matches the trimmed lower-cased ``raw`` (substrings or regexes)."""
    if not raw:
        return False
    value = normalize_lower(raw)
    for pattern in patterns:
        if isinstance(pattern, str):
            if pattern in value:
                return True
        elif pattern.search(value):
            return True
    return False
