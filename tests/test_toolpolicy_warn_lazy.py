"""``_warn_unknown_entries`` returns at once when no step has an entry to check, and warns
exactly as its old body (kept here verbatim) on every table of steps."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterable, Sequence

import pytest

from openclaw_runtime.toolpolicy import pipeline
from openclaw_runtime.toolpolicy.layers import PolicyStep
from openclaw_runtime.toolpolicy.matching import ToolPolicy, compile_pattern
from openclaw_runtime.toolpolicy.names import known_tool_names, normalize_tool_name

ALLOWS: list[tuple[str, ...] | None] = [
    None,
    (),
    ("read",),
    ("mystery_tool",),
    ("group:fs", "nope"),
    ("", " "),
    ("my_tool",),
    ("*",),
]
DENIES: list[tuple[str, ...]] = [(), ("exec",), ("unknown_one", "read"), ("web_*",), ("",)]


def _old(
    steps: Sequence[PolicyStep], names: Iterable[str], warn: list[str]
) -> None:  # the body before the early return, warning into ``warn``
    known = set(known_tool_names()) | {normalize_tool_name(n) for n in names}
    for step in steps:
        unknown = [
            entry
            for entry in (*(step.policy.allow or ()), *step.policy.deny)
            if pipeline._names_only_unknown(entry, known)
        ]
        if step.policy.allow is not None and not any(map(compile_pattern, step.policy.allow)):
            warn.append(f"tools: {step.source} has an empty allow list; it restricts nothing")
        if unknown:
            warn.append(
                f"tools: {step.source} names unknown tools ({', '.join(unknown)}); "
                "they match nothing"
            )


def _tables() -> list[list[PolicyStep]]:
    policies = [ToolPolicy(a, d) for a, d in itertools.product(ALLOWS, DENIES)]
    rng = random.Random(7)
    tables: list[list[PolicyStep]] = [[]]
    tables += [[PolicyStep("global", "tools", p)] for p in policies]
    for _ in range(60):
        count = rng.randint(1, 4)
        tables.append([PolicyStep(f"l{i}", f"s{i}", rng.choice(policies)) for i in range(count)])
    tables.append([PolicyStep(f"l{i}", f"s{i}", ToolPolicy()) for i in range(5)])
    return tables


@pytest.mark.parametrize("names", [(), ("my_tool",), ("read", "mystery_tool")])
def test_warnings_as_before(monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...]) -> None:
    got: list[str] = []
    monkeypatch.setattr(pipeline, "_warn_once", got.append)
    for steps in _tables():
        got.clear()
        want: list[str] = []
        pipeline._warn_unknown_entries(steps, iter(names))
        _old(steps, iter(names), want)
        assert got == want, steps


def test_no_entries_reads_no_names(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> list[str]:
        raise AssertionError("known names looked up")

    monkeypatch.setattr(pipeline, "known_tool_names", boom)
    pipeline._warn_unknown_entries([PolicyStep("global", "tools", ToolPolicy())], iter(["x"]))
