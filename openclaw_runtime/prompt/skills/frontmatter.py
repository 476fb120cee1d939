"""A small parser for SKILL.md front matter (the subset of YAML skills use).

Accepted between a leading ``---`` line and the next ``---`` line: ``key: value`` pairs whose
value is plain text, a quoted string, ``true``/``false``, a number, or inline JSON (an object
``{...}`` or a list ``[...]``, as OpenClaw's ``metadata`` is written); and one level of
indented ``key: value`` lines under a key with no value (a mapping, e.g. ``env:``). Anything
else (a list item, a tab indent, a line without ``:``, a duplicate key, a missing closing
``---``) raises ``FrontmatterError`` with the line number, so a broken skill is reported
instead of half-read. The project has no YAML dependency; this covers what skills write.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["FrontmatterError", "parse_frontmatter"]

_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)\s*:(?:\s+(.*))?$")


class FrontmatterError(ValueError):
    """The front matter is malformed; the message names the line."""


def _scalar(raw: str, lineno: int) -> Any:
    value = raw.strip()
    if not value:
        return ""
    if value[0] in "{[":
        try:
            return json.loads(value)
        except json.JSONDecodeError as exc:
            raise FrontmatterError(f"line {lineno}: invalid inline JSON ({exc.msg})") from None
    if value[0] in "\"'":
        if len(value) < 2 or value[-1] != value[0]:
            raise FrontmatterError(f"line {lineno}: unterminated quoted string")
        inner = value[1:-1]
        if value[0] == '"':
            try:
                decoded: str = json.loads(value)
            except json.JSONDecodeError:
                raise FrontmatterError(f"line {lineno}: invalid quoted string") from None
            return decoded
        return inner.replace("''", "'")
    if " #" in value:
        value = value.split(" #", 1)[0].rstrip()
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("null", "~"):
        return None
    if re.fullmatch(r"-?\d+", value):
        return int(value)
    return value


def parse_frontmatter(text: str) -> tuple[dict[str, Any], str]:
    """``(fields, body)`` of a SKILL.md. No leading ``---``: no fields, the whole text is body."""
    text = text.lstrip("\ufeff")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    fields: dict[str, Any] = {}
    parent: str | None = None
    for index, line in enumerate(lines[1:], start=2):
        if line.strip() == "---":
            return fields, "\n".join(lines[index:]).lstrip("\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if "\t" in line[: len(line) - len(line.lstrip())]:
            raise FrontmatterError(f"line {index}: tab indentation is not allowed")
        indented = line[0] == " "
        match = _KEY.match(line.strip())
        if match is None:
            raise FrontmatterError(f"line {index}: expected 'key: value', got {line.strip()!r}")
        key, raw = match.group(1), match.group(2) or ""
        if indented:
            if parent is None:
                raise FrontmatterError(f"line {index}: indented line outside a mapping")
            mapping = fields[parent]
            if key in mapping:
                raise FrontmatterError(f"line {index}: duplicate key {parent}.{key}")
            mapping[key] = _scalar(raw, index)
            continue
        if key in fields:
            raise FrontmatterError(f"line {index}: duplicate key {key!r}")
        if raw.strip():
            fields[key], parent = _scalar(raw, index), None
        else:
            fields[key], parent = {}, key
    raise FrontmatterError("front matter has no closing '---' line")
