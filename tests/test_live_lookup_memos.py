"""The per-run look-ups that are now remembered (``live_follow.live_inbox_of`` per class,
``FileLiveInbox._paths`` per session id) give the same answers as before, including refusals."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import pytest

from openclaw_runtime.runner import live_follow as live_run
from openclaw_runtime.runner.live_inbox import FileLiveInbox
from openclaw_runtime.runner.live_run import live_inbox_of


class Store:
    def __init__(self, inbox: object) -> None:
        self.live_inbox = inbox


class NotAnInbox:
    def open(self) -> None: ...


def test_live_inbox_of_remembers_only_classes_that_carry_the_protocol(tmp_path: Path) -> None:
    inbox = FileLiveInbox(tmp_path)
    assert live_inbox_of(Store(inbox)) is inbox
    assert FileLiveInbox in live_run._INBOX_CLASSES
    assert live_inbox_of(Store(FileLiveInbox(tmp_path))) is not inbox  # per store, not cached

    # methods on the instance, not the class: accepted, but never remembered for the class
    async def method(*_: Any) -> Any:
        return None

    loose = types.SimpleNamespace(**{name: method for name in live_run._INBOX_MEMBERS})
    assert live_inbox_of(Store(loose)) is loose
    assert types.SimpleNamespace not in live_run._INBOX_CLASSES
    assert live_inbox_of(Store(types.SimpleNamespace(open=method))) is None

    assert live_inbox_of(Store(NotAnInbox())) is None
    assert live_inbox_of(Store(None)) is None
    assert live_inbox_of(object()) is None


def test_inbox_paths_are_remembered_and_still_validated(tmp_path: Path) -> None:
    inbox = FileLiveInbox(tmp_path)
    first = inbox._paths("abc")
    assert first == tuple(str(tmp_path / f"abc.{end}") for end in ("owner", "inbox.jsonl", "lock"))
    assert inbox._paths("abc") is first
    for bad in ("../escape", "a/b", ""):
        with pytest.raises(ValueError):
            inbox._paths(bad)
        assert bad not in inbox._path_memo
