"""Parsing JSON that came from outside the process (provider error bodies, model text).

Such bytes can be anything, including JSON nested thousands of levels deep. The standard
library's ``json.loads`` then raises ``RecursionError`` (not ``ValueError``), which escaped the
classifier's ``except ValueError`` and took whole runs down; ``orjson`` stops at 1,024 levels
with a ``JSONDecodeError``, but a value 300 levels deep still parses and then breaks whatever
walks it recursively (``orjson.dumps`` refuses more than 254 levels with a ``TypeError``).

So every place that parses a peer's JSON goes through ``loads_untrusted``: it parses with
orjson (no Python recursion) and refuses values nested deeper than ``MAX_UNTRUSTED_JSON_DEPTH``
(real error bodies are a handful of levels deep), raising ``UntrustedJSONError`` — a
``ValueError`` — for anything it will not return. Callers keep their ``except ValueError``;
whatever they get back is shallow enough to walk and to serialize again.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

__all__ = [
    "MAX_UNTRUSTED_JSON_DEPTH",
    "UntrustedJSONError",
    "json_depth_exceeds",
    "loads_untrusted",
    "prune_json",
    "untrusted_json_object",
]

#: How deeply nested a peer's JSON may be (error bodies are 2-6 levels deep in practice).
MAX_UNTRUSTED_JSON_DEPTH: Final = 64


class UntrustedJSONError(ValueError):
    """The text is not JSON, or is JSON nested deeper than the limit."""


def json_depth_exceeds(value: object, limit: int) -> bool:
    """Is ``value`` (parsed JSON: dicts, lists, scalars) nested more than ``limit`` levels?

    Iterative, so a deep value cannot exhaust the stack while being measured. A scalar has
    depth 0, ``[]`` and ``{}`` depth 1.
    """
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth + 1 > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


#: What ``prune_json`` puts where a container was nested too deeply.
PRUNED: Final = "(nested too deeply)"


def prune_json(value: Any, max_depth: int = MAX_UNTRUSTED_JSON_DEPTH) -> Any:
    """A copy of ``value`` (parsed JSON) with every container deeper than ``max_depth``
    replaced by ``PRUNED``: the shallow facts of a too-deep payload (its message, code and
    type) survive, and the copy can be serialized and walked. Recursion is bounded by
    ``max_depth``."""
    if not isinstance(value, dict | list):
        return value
    if max_depth <= 0:
        return PRUNED
    if isinstance(value, dict):
        return {key: prune_json(item, max_depth - 1) for key, item in value.items()}
    return [prune_json(item, max_depth - 1) for item in value]


def loads_untrusted(data: str | bytes, *, max_depth: int = MAX_UNTRUSTED_JSON_DEPTH) -> Any:
    """Parse a peer's JSON; ``UntrustedJSONError`` (a ``ValueError``) for anything else.

    Stricter than ``json.loads`` where JavaScript's ``JSON.parse`` is too: no ``NaN`` or
    ``Infinity``, no lone surrogates. Never raises anything but ``UntrustedJSONError``.
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise UntrustedJSONError(f"not JSON: {exc}") from None
    if json_depth_exceeds(value, max_depth):
        raise UntrustedJSONError(f"JSON nested deeper than {max_depth} levels")
    return value


def untrusted_json_object(data: str | bytes) -> dict[str, Any] | None:
    """The JSON object in ``data``, or None (not JSON, not an object, or too deep)."""
    try:
        value = loads_untrusted(data)
    except UntrustedJSONError:
        return None
    return value if isinstance(value, dict) else None
