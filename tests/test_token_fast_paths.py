"""The token estimate's shortcuts for what a tool loop asks every request: an ASCII string's
weight is its length (``_string_tokens``), an empty prompt is the boundary overhead alone
(``boundary_token_pressure``), an integer estimate is its own whole-token count
(``preemptive._as_tokens``). Random and table inputs against the formulas they replace."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from openclaw_runtime.context import preemptive, tokens


class _Str(str):
    pass


def _text(rng: random.Random) -> Any:
    alphabet = rng.choice(['ab c{}"', "é", "漢字", "\U0001f600", "\U00020000", "aé漢\U0001f600"])
    text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
    return _Str(text) if rng.random() < 0.1 else text


@pytest.mark.parametrize("seed", range(10))
def test_string_tokens_equal_the_weighted_formula(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(500):
        text = _text(rng)
        for per_token in (2, 3, 4):
            want = math.ceil(tokens.estimate_string_chars(text) / per_token)
            assert tokens._string_tokens(text, per_token) == want, repr(text)
    assert tokens._string_tokens("") == 0
    assert tokens._string_tokens(None) == 0  # type: ignore[arg-type]  # falsy: weighs nothing


def _boundary_reference(history: int, system_prompt: Any, prompt: Any) -> int:
    total = history + tokens._system_tokens_slow(system_prompt) + tokens._prompt_tokens(prompt)
    return max(0, math.ceil(total * tokens.SAFETY_MARGIN))


@pytest.mark.parametrize("seed", range(10))
def test_boundary_pressure_equals_the_formula(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(300):
        history = rng.choice([0, 1, 17, 10**6, -50])
        system_prompt = rng.choice([None, "", "  ", "You are helpful.", "漢字 prompt", _Str("s")])
        prompt = rng.choice(["", "", _Str(""), "hello", "é", _text(rng)])
        got = tokens.boundary_token_pressure(history, system_prompt=system_prompt, prompt=prompt)
        assert got == _boundary_reference(history, system_prompt, prompt)
    for bad in (None, 3, b""):
        with pytest.raises(TypeError):
            tokens.boundary_token_pressure(1, prompt=bad)  # type: ignore[arg-type]


def _as_tokens_reference(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise TypeError
    return max(0, math.ceil(value))


def test_as_tokens_equals_the_formula() -> None:
    values: list[Any] = [0, 1, -1, 7, -(10**30), 10**30, 0.0, 0.5, -0.5, 2.0000001, 1e300]
    for value in values:
        got = preemptive._as_tokens(value)
        assert got == _as_tokens_reference(value)
        assert type(got) is int
    for bad in (True, False, float("nan"), "3", None):
        with pytest.raises(TypeError):
            preemptive._as_tokens(bad)
    with pytest.raises(OverflowError):
        preemptive._as_tokens(float("inf"))
