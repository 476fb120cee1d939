"""The compaction successor: an engine that moved the session to a new id/file (seed 000 §6.3).

An engine's ``compact`` may answer with ``CompactResult.successor``: the session it continued
the conversation in (OpenClaw ``resolveContextEngineCompactionSuccessor``). The host only
follows it when it stays inside the same binding: the same store (the file lies next to the
current one), the same session key, and an id and file that name the same session. Anything
else is refused with a ``SuccessorError`` that says what was inconsistent; the run then stays
on the session it had.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..transcript.session_ids import validate_session_id

__all__ = ["CompactionSuccessor", "SuccessorError", "resolve_compaction_successor"]

_SUFFIX = ".jsonl"


class SuccessorError(ValueError):
    """A successor the host must not follow (the message says why)."""


@dataclass(frozen=True, slots=True)
class CompactionSuccessor:
    """What an engine reports: the new session id and/or file (and, optionally, the key it
    believes the session is bound to: it must be the current one)."""

    session_id: str | None = None
    session_file: str | None = None
    session_key: str | None = None


def _coerce(reported: Any) -> CompactionSuccessor:
    if isinstance(reported, CompactionSuccessor):
        return reported
    if isinstance(reported, Mapping):

        def pick(*names: str) -> Any:
            for name in names:
                if reported.get(name) is not None:
                    return reported[name]
            return None

        return CompactionSuccessor(
            session_id=pick("session_id", "sessionId"),
            session_file=pick("session_file", "sessionFile"),
            session_key=pick("session_key", "sessionKey"),
        )
    raise SuccessorError(
        f"compaction successor must be a CompactionSuccessor or a mapping, "
        f"not {type(reported).__name__}"
    )


def resolve_compaction_successor(
    reported: Any,
    *,
    current_session_id: str,
    current_session_file: str,
    current_session_key: str | None,
) -> str | None:
    """The session id to continue on, or ``None`` to stay (nothing reported, or the current
    session reported back). Raises ``SuccessorError`` for a successor outside the binding."""
    if reported is None:
        return None
    successor = _coerce(reported)
    for name in ("session_id", "session_file", "session_key"):
        value = getattr(successor, name)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise SuccessorError(f"compaction successor {name} must be a non-empty string")
    if successor.session_key is not None and successor.session_key != current_session_key:
        raise SuccessorError("compaction successor changed the session key binding")
    file_id: str | None = None
    if successor.session_file is not None:
        path = Path(successor.session_file)
        if not path.name.endswith(_SUFFIX):
            raise SuccessorError(
                f"compaction successor file {path.name!r} is not a {_SUFFIX} transcript"
            )
        current_dir = Path(current_session_file).resolve().parent
        if path.resolve().parent != current_dir:
            raise SuccessorError(
                "compaction successor file is outside the session store (binding changed)"
            )
        file_id = path.name[: -len(_SUFFIX)]
    if successor.session_id is not None and file_id is not None and file_id != successor.session_id:
        raise SuccessorError("compaction successor identity is inconsistent (id and file differ)")
    new_id = successor.session_id or file_id
    if new_id is None:
        return None
    try:
        new_id = validate_session_id(new_id)
    except ValueError as exc:
        raise SuccessorError(f"compaction successor id is invalid: {exc}") from exc
    return None if new_id == current_session_id else new_id
