"""``shared_prefix_length`` and ``starts_with``: the very same objects, never ``==``."""

from __future__ import annotations

from typing import Any

import pytest

from openclaw_runtime._prefix import shared_prefix_length, starts_with
from openclaw_runtime.messages import UserMessage

A, B, C, D = (UserMessage(content=text) for text in "abcd")
B_COPY = B.model_copy()  # equal to B, another object


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ([], [], 0),
        ([], [A, B], 0),
        ([A, B], [], 0),
        ([A, B, C], [A, B, C], 3),
        ([A, B], [A, B, C, D], 2),  # a continuation
        ([A, B, C, D], [A, B], 2),  # a shorter history of the same objects
        ([A, B, C], [D, B, C], 0),
        ([A, B, C], [A, D, C], 1),
        ([A, B, C], [A, B, D, C], 2),
        ([A, B, C], [A, B_COPY, C], 1),  # equal is not the same object
        ([A, A, A], [A, A, B], 2),
        ((A, B, C), [A, B, D], 2),  # any sequences
    ],
)
def test_shared_prefix_length(old: Any, new: Any, expected: int) -> None:
    assert B_COPY == B and B_COPY is not B
    assert shared_prefix_length(old, new) == expected
    assert shared_prefix_length(new, old) == expected  # symmetric


@pytest.mark.parametrize(
    ("items", "prefix", "expected"),
    [
        ([], [], True),
        ([A], [], True),
        ([A, B, C], [A, B], True),
        ([A, B], [A, B], True),
        ([A], [A, B], False),  # shorter than the prefix
        ([A, B_COPY, C], [A, B], False),  # equal is not the same object
        ([B, A], [A, B], False),
    ],
)
def test_starts_with(items: Any, prefix: Any, expected: bool) -> None:
    assert starts_with(items, prefix) is expected
