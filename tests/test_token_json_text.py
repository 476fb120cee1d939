"""``tokens._json_text`` runs the C encoder made once (no cycle-tracking dict) instead of
``JSONEncoder.encode``'s Python layers: random JSON-like values (nested containers, every
scalar, awkward floats, big integers, non-string keys, subclasses, models with ``to_dict``)
give exactly ``encode``'s text; what ``encode`` refuses (cycles, unknown objects, bad keys)
gives ``None``; a value nested deeper than the stack raises as before."""

from __future__ import annotations

import enum
import random
import sys
from typing import Any

import pytest

from openclaw_runtime.context import tokens
from openclaw_runtime.messages import TextContent, ToolCall


class _Str(str):
    pass


class _Int(enum.IntEnum):
    ONE = 1


def _reference(value: Any) -> str | None:
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    try:
        return tokens._JSON.encode(value)
    except (TypeError, ValueError):
        return None


_SCALARS: list[Any] = [
    "",
    "path/é",
    '\u2028\x00"\\',
    _Str("sub"),
    0,
    -1,
    2**63,
    10**40,
    _Int.ONE,
    True,
    False,
    None,
    0.0,
    -0.0,
    1.5,
    1e300,
    float("nan"),
    float("inf"),
    float("-inf"),
]
_KEYS: list[Any] = ["k", "é", 1, 2.5, True, None, _Str("s"), float("nan")]


def _value(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.4:
        return rng.choice(_SCALARS)
    if roll < 0.65:
        return {rng.choice(_KEYS): _value(rng, depth + 1) for _ in range(rng.randrange(4))}
    if roll < 0.85:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if roll < 0.9:
        return tuple(_value(rng, depth + 1) for _ in range(rng.randrange(3)))
    if roll < 0.93:
        return {(1, 2): 1}  # a key ``encode`` refuses
    if roll < 0.96:
        return {"x": object()}  # a value it cannot encode
    return TextContent(text="t") if roll < 0.98 else ToolCall(id="c", name="n")


@pytest.mark.parametrize("seed", range(20))
def test_json_text_equals_the_encoder(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        value = _value(rng, 0)
        assert tokens._json_text(value) == _reference(value)


def test_cycles_give_none_and_deep_values_raise_as_before() -> None:
    items: list[Any] = [1]
    items.append(items)
    mapping: dict[str, Any] = {"a": [1, 2]}
    mapping["a"].append({"back": mapping})
    for value in (items, mapping, {"ok": 1, "cycle": items}):
        assert tokens._json_text(value) is None
        assert _reference(value) is None
    deep: Any = 1
    for _ in range(sys.getrecursionlimit() * 2):
        deep = [deep]
    with pytest.raises(RecursionError):
        tokens._JSON.encode(deep)
    with pytest.raises(RecursionError):
        tokens._json_text(deep)
    # the encoder keeps no state between calls: the same value again, and a fresh one
    assert tokens._json_text({"path": "f.txt"}) == '{"path":"f.txt"}'
    assert tokens._json_text(items) is None
