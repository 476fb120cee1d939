"""Tables for the lifecycle decisions (``context.lifecycle_policy``) and the successor rules
(``context.successor``); the run wiring is covered end to end in
``test_context_engine_lifecycle``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime.context.lifecycle_policy import (
    resolve_maintenance_mode,
    should_bootstrap_context_engine,
    should_defer_budget_compaction,
)
from openclaw_runtime.context.successor import (
    CompactionSuccessor,
    SuccessorError,
    resolve_compaction_successor,
)


@pytest.mark.parametrize(
    ("had_file", "bootstrap", "maintain", "already", "expected"),
    [
        (True, True, False, False, True),
        (True, False, True, False, True),  # maintain alone still gets the bootstrap pass
        (True, False, False, False, False),  # nothing to call
        (False, True, True, False, False),  # a new session has nothing to import
        (True, True, True, True, False),  # once per engine and session per process
    ],
)
def test_should_bootstrap(
    had_file: bool, bootstrap: bool, maintain: bool, already: bool, expected: bool
) -> None:
    assert (
        should_bootstrap_context_engine(
            had_session_file=had_file,
            has_bootstrap=bootstrap,
            has_maintain=maintain,
            already_bootstrapped=already,
        )
        is expected
    )


@pytest.mark.parametrize(
    ("reason", "has_maintain", "mode", "expected"),
    [
        ("turn", True, "background", "background"),
        ("turn", True, "foreground", "foreground"),
        ("bootstrap", True, "background", "foreground"),  # only turn maintenance defers
        ("compaction", True, "background", "foreground"),
        ("turn", False, "background", "skip"),
    ],
)
def test_maintenance_mode(reason: Any, has_maintain: bool, mode: str, expected: str) -> None:
    assert (
        resolve_maintenance_mode(reason, has_maintain=has_maintain, turn_maintenance_mode=mode)
        == expected
    )


@pytest.mark.parametrize(
    ("trigger", "owns", "mode", "maintain", "expected"),
    [
        ("preemptive", True, "background", True, True),
        ("budget", True, "background", True, True),
        ("overflow", True, "background", True, False),  # only budget compaction defers
        ("timeout", True, "background", True, False),
        ("manual", True, "background", True, False),
        ("preemptive", False, "background", True, False),  # must own compaction
        ("preemptive", True, "foreground", True, False),  # must maintain in the background
        ("preemptive", True, "background", False, False),  # must have maintain
    ],
)
def test_defer_budget_compaction(
    trigger: str, owns: bool, mode: str, maintain: bool, expected: bool
) -> None:
    assert (
        should_defer_budget_compaction(
            trigger, owns_compaction=owns, turn_maintenance_mode=mode, has_maintain=maintain
        )
        is expected
    )


def _resolve(reported: Any, tmp_path: Path, key: str | None = "chat:1") -> str | None:
    return resolve_compaction_successor(
        reported,
        current_session_id="s1",
        current_session_file=str(tmp_path / "s1.jsonl"),
        current_session_key=key,
    )


def test_successor_accepted_forms(tmp_path: Path) -> None:
    assert _resolve(None, tmp_path) is None
    assert _resolve(CompactionSuccessor(session_id="s1"), tmp_path) is None  # same session
    assert _resolve(CompactionSuccessor(session_id="s2"), tmp_path) == "s2"
    assert _resolve({"sessionFile": str(tmp_path / "s3.jsonl")}, tmp_path) == "s3"
    both = {"session_id": "s4", "session_file": str(tmp_path / "s4.jsonl")}
    assert _resolve(both, tmp_path) == "s4"
    same_key = CompactionSuccessor(session_id="s5", session_key="chat:1")
    assert _resolve(same_key, tmp_path) == "s5"


@pytest.mark.parametrize(
    ("reported", "message"),
    [
        ({"sessionId": "s2", "sessionFile": "{dir}/s3.jsonl"}, "identity is inconsistent"),
        ({"sessionFile": "{dir}/other/s2.jsonl"}, "outside the session store"),
        ({"sessionFile": "{dir}/s2.txt"}, "not a .jsonl transcript"),
        ({"sessionId": "s2", "sessionKey": "chat:2"}, "changed the session key binding"),
        ({"sessionId": ""}, "non-empty string"),
        ({"sessionId": "../escape"}, "id is invalid"),
        ("s2", "must be a CompactionSuccessor or a mapping"),
    ],
)
def test_successor_refused(tmp_path: Path, reported: Any, message: str) -> None:
    if isinstance(reported, dict):
        reported = {k: v.replace("{dir}", str(tmp_path)) for k, v in reported.items()}
    with pytest.raises(SuccessorError, match=message):
        _resolve(reported, tmp_path)
