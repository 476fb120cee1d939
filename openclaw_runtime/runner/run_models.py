"""The run's own models of its transcript entries, parsed once per entry per run.

A run's end reads its messages more than once (the payloads, the facts, the
``RunResult``). They used to be the session's cached models for the payloads and facts
plus a second parse of every entry for the ``RunResult`` (which must not share objects with
the session's history: a caller editing a result's message must not change the next
request). ``RunEntryModels`` parses each of the run's entries once, with the same function
the session uses (``entry_message``), and hands the same model out on every later read of
that entry within the run. None of them is the session's: the session makes its own models
only when its context is read (``transcript.reader``), so a run whose session is not read
again never makes them.

An entry is recognised by its id *and* by identity (a tree rebuilt from the file after
another writer's change has new entry dicts under the same ids: they are parsed again).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..transcript.session_context import entry_message

__all__ = ["RunEntryModels"]


class RunEntryModels:
    """``entry`` → this run's model of its message (``entry_message``), made once."""

    __slots__ = ("_models",)

    def __init__(self) -> None:
        self._models: dict[str, tuple[Mapping[str, Any], Any]] = {}

    def message_of(self, entry: Mapping[str, Any]) -> Any:
        """``entry_message(entry)``, the same object for the same entry within the run."""
        key = entry.get("id")
        if not isinstance(key, str):
            return entry_message(entry)
        kept = self._models.get(key)
        if kept is not None and kept[0] is entry:
            return kept[1]
        model = entry_message(entry)
        self._models[key] = (entry, model)
        return model
