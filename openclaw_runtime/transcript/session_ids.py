"""Session ids become file names, so they are validated before they touch the filesystem.

The rule is OpenClaw's ``SAFE_SESSION_ID_RE`` (``^[a-z0-9][a-z0-9._-]{0,127}$``, case-insensitive,
after trimming; ASCII letters only) plus its reserved compaction-checkpoint names. Each way an
id can be bad gets its own message, so a caller sees *why* (separator, NUL, length...) rather
than a bare "invalid". The resolved path is checked once more against the sessions folder.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .._exceptions import TranscriptError

__all__ = [
    "SAFE_SESSION_ID_RE",
    "SESSION_ID_MAX_CHARS",
    "InvalidSessionIdError",
    "session_file_path",
    "validate_session_id",
]

SESSION_ID_MAX_CHARS = 128
# ASCII only: with re.IGNORECASE alone, [a-z] also matches the Kelvin sign, "ſ" and "ı"
# (their case folds are ASCII letters), and "$" would accept a trailing newline.
SAFE_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z", re.ASCII)
_RESERVED_CHECKPOINT_RE = re.compile(
    r"^.+\.checkpoint\.[0-9a-f]{8}-[0-9a-f]{4}-[1-5][0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\Z",
    re.IGNORECASE | re.ASCII,
)
_SHOWN_CHARS = 40


class InvalidSessionIdError(TranscriptError, ValueError):
    """A session id that cannot safely name a session file."""

    def __init__(self, session_id: object, reason: str) -> None:
        self.session_id = session_id
        self.reason = reason
        super().__init__(f"Invalid session ID {_shown(session_id)}: {reason}")


def _shown(value: object) -> str:
    text = ascii(value)  # a look-alike letter (Kelvin sign...) is shown as its escape
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def validate_session_id(session_id: object) -> str:
    """The trimmed id, or ``InvalidSessionIdError`` naming what is wrong with it."""
    if not isinstance(session_id, str):
        raise InvalidSessionIdError(
            session_id, f"must be a string, not {type(session_id).__name__}"
        )
    trimmed = session_id.strip()
    if not trimmed:
        raise InvalidSessionIdError(session_id, "must not be empty")
    if "\x00" in trimmed:
        raise InvalidSessionIdError(session_id, "must not contain a NUL character")
    if "/" in trimmed or "\\" in trimmed:
        raise InvalidSessionIdError(session_id, "must not contain a path separator")
    if len(trimmed) > SESSION_ID_MAX_CHARS:
        raise InvalidSessionIdError(
            session_id, f"is {len(trimmed)} characters long; at most {SESSION_ID_MAX_CHARS} allowed"
        )
    if not trimmed[0].isascii() or not trimmed[0].isalnum():
        raise InvalidSessionIdError(session_id, "must start with a letter or a digit")
    if not SAFE_SESSION_ID_RE.fullmatch(trimmed):
        raise InvalidSessionIdError(
            session_id, "may only contain ASCII letters, digits, '.', '_' and '-'"
        )
    if _RESERVED_CHECKPOINT_RE.fullmatch(trimmed):
        raise InvalidSessionIdError(session_id, "is reserved for compaction checkpoints")
    return trimmed


def session_file_path(
    sessions_dir: str | Path, session_id: str, *, resolved_root: Path | None = None
) -> Path:
    """``<sessions_dir>/<id>.jsonl`` for a validated id, proven to stay inside the folder.

    ``resolved_root`` is ``sessions_dir`` already resolved (a store resolves it once). A valid
    id has no separator and starts with a letter or digit, so only a symbolic link planted
    at the file itself can lead elsewhere: that one is resolved and checked; a plain file
    costs one ``lstat``.
    """
    safe_id = validate_session_id(session_id)
    root = resolved_root if resolved_root is not None else Path(sessions_dir).resolve()
    path = root / f"{safe_id}.jsonl"
    if not os.path.islink(path):
        return path
    target = path.resolve()
    if target.parent != root:
        raise InvalidSessionIdError(session_id, "resolves outside the sessions folder")
    return target
