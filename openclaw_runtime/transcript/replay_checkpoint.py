"""A persisted sanitizer checkpoint: where a restarted process may resume sanitizing a history.

The first turn after a restart used to run the whole sanitizer pipeline over the whole
history (half of a cold 10 000-message turn). Yet most of a history was already sanitized by
the process that wrote it, and for most sessions the sanitized prefix *is* the stored prefix:
nothing in it needed repair. This module records that fact beside the session, in a small
side file (``<session file>.replay.json``; OpenClaw's lines are never touched), and checks it
on the next cold start:

* ``messages``: the length ``n`` of a prefix of the replayed history that ends at a stable
  boundary (``transcript.incremental``) and that the pipeline leaves exactly as it is, for
* ``fingerprint``: one policy and one sanitizer set (names, orders, this package's version);
* ``entries`` / ``file_bytes`` / ``file_crc``: the session file as it was when the prefix was
  read: its first ``file_bytes`` bytes (CRC-32) holding its first ``entries`` entries;
* ``ids_digest``: the ids of the entries the ``n`` messages came from, in order;
* ``tokens`` / ``token_scheme`` (optional): the sum of the ``n`` messages' token estimates and
  the estimator it belongs to (a string the runner chooses, ``runner.history_tokens``), so a
  cold start does not re-estimate a history it only reads.
* ``call_ids`` (optional): the tool-call ids the ``n`` messages name, which the sanitizer
  checks the rest of the history against (``transcript.incremental``), so a cold start does
  not read them out of every message again.
* ``clean`` (optional, ``cleanBytes`` / ``cleanCrc``): the file's clean head
  (``transcript.clean_head``), which the next load takes without checking each line; it
  comes from the bytes a load checked, and the load checks it against the bytes it parses.

A cold start takes the first ``n`` messages as already sanitized only if all of it still
holds: same fingerprint, the file's first bytes unchanged (another writer only appended),
the first ``n`` messages made from the same entries of that unchanged part, and message
``n`` still a stable boundary of the history as it is now (a user message with a replayed
assistant turn after it). Anything else (a rewrite, a compaction, a moved leaf, another
policy or plugin set, a missing or unreadable side file) falls back to the full pipeline,
so the result is always the full pipeline's. The side file is a cache: it is written
atomically but not fsynced; losing it costs one slow turn, never a wrong one.

Recording is incremental: the CRC of the file's first bytes is carried forward from the last
record (or the cold start's check) over the bytes appended since, so a turn end reads only
what it wrote (a session whose checkpoint was not taken carries it from its clean head,
``transcript.clean_head``). Should the file's head have been rewritten in place meanwhile,
the recorded CRC is of the bytes read before, and the next cold start (which CRCs the bytes
it loads) ignores the checkpoint: a slow turn, never a wrong one. A cold start whose load
found the checkpoint's ``file_crc`` at the start of the bytes it parsed
(``CleanHead.checked``) does not read the file's head again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import operator
import os
import weakref
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import orjson

from .._version import __version__
from ..redaction import package_logger
from .clean_head import CleanHead, KnownHead
from .incremental import IncrementalSanitizer, boundary_holds_after

__all__ = [
    "CHECKPOINT_SUFFIX",
    "CheckpointSource",
    "ReplayCheckpoint",
    "ReplayCheckpointer",
    "checkpoint_path",
    "ids_digest",
    "key_fingerprint",
    "read_checkpoint",
    "read_side_file",
    "write_checkpoint",
]

logger = package_logger(logging.getLogger("openclaw_runtime.transcript"))

CHECKPOINT_SUFFIX = ".replay.json"
_FORMAT = 1
#: re-record after the prefix grew by this share (or at least ``_MIN_STEP`` messages); a
#: closing session always records its latest prefix
_STEP_SHARE = 16
_MIN_STEP = 32
_UNREAD = object()


@dataclass(frozen=True, slots=True)
class ReplayCheckpoint:
    """What the side file holds (module docstring)."""

    fingerprint: str
    messages: int
    entries: int
    file_bytes: int
    file_crc: int
    ids_digest: str
    tokens: int | None = None
    token_scheme: str | None = None
    call_ids: tuple[str, ...] | None = None
    clean: tuple[int, int] | None = None


def checkpoint_path(session_path: str | Path) -> Path:
    """The side file of a session file."""
    return Path(f"{session_path}{CHECKPOINT_SUFFIX}")


def _canonical(value: Any) -> Any:
    """A JSON-able form of a policy value that is the same in every process."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (set, frozenset)):
        return sorted((_canonical(v) for v in value), key=repr)
    if isinstance(value, Mapping):
        return sorted(([str(k), _canonical(v)] for k, v in value.items()), key=repr)
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return f"{type(value).__qualname__}:{value!r}"


def key_fingerprint(key: tuple[Any, ...]) -> str:
    """The fingerprint of an ``IncrementalSanitizer`` key (policy, sanitizer names and
    orders) and of this package's version."""
    payload = orjson.dumps([_FORMAT, __version__, _canonical(key)])
    return hashlib.sha256(payload).hexdigest()


def ids_digest(entries: Sequence[Mapping[str, Any]]) -> str:
    """The digest of the entries' ids, in order."""
    # one update over every id and its newline (the digest of the same bytes as hashing
    # them id by id, at a fraction of the calls)
    text = "".join([f"{entry.get('id')}\n" for entry in entries])
    return hashlib.sha256(text.encode()).hexdigest()


def read_checkpoint(path: Path) -> ReplayCheckpoint | None:
    """The checkpoint in ``path``; ``None`` when missing or not one of ours."""
    try:
        data = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        return None
    try:
        checkpoint = ReplayCheckpoint(
            fingerprint=data["fingerprint"],
            messages=data["messages"],
            entries=data["entries"],
            file_bytes=data["fileBytes"],
            file_crc=data["fileCrc"],
            ids_digest=data["idsDigest"],
        )
    except KeyError:
        return None
    tokens, scheme = data.get("tokens"), data.get("tokenScheme")
    if type(tokens) is int and tokens >= 0 and isinstance(scheme, str):
        checkpoint = dataclasses.replace(checkpoint, tokens=tokens, token_scheme=scheme)
    call_ids = data.get("callIds")
    if type(call_ids) is list and all(type(i) is str for i in call_ids):
        checkpoint = dataclasses.replace(checkpoint, call_ids=tuple(call_ids))
    clean_bytes, clean_crc = data.get("cleanBytes"), data.get("cleanCrc")
    if type(clean_bytes) is int and type(clean_crc) is int and clean_bytes > 0 <= clean_crc:
        checkpoint = dataclasses.replace(checkpoint, clean=(clean_bytes, clean_crc))
    ints = (checkpoint.messages, checkpoint.entries, checkpoint.file_bytes, checkpoint.file_crc)
    if not all(type(v) is int and v >= 0 for v in ints):
        return None
    if not isinstance(checkpoint.fingerprint, str) or not isinstance(checkpoint.ids_digest, str):
        return None
    return checkpoint


def write_checkpoint(path: Path, checkpoint: ReplayCheckpoint) -> None:
    """Write ``checkpoint`` atomically (a temporary file renamed over ``path``)."""
    record: dict[str, Any] = {
        "format": _FORMAT,
        "fingerprint": checkpoint.fingerprint,
        "messages": checkpoint.messages,
        "entries": checkpoint.entries,
        "fileBytes": checkpoint.file_bytes,
        "fileCrc": checkpoint.file_crc,
        "idsDigest": checkpoint.ids_digest,
    }
    if checkpoint.tokens is not None and checkpoint.token_scheme is not None:
        record["tokens"] = checkpoint.tokens
        record["tokenScheme"] = checkpoint.token_scheme
    if checkpoint.call_ids is not None:
        record["callIds"] = list(checkpoint.call_ids)
    if checkpoint.clean is not None:
        record["cleanBytes"], record["cleanCrc"] = checkpoint.clean
    data = orjson.dumps(record)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def read_side_file(session_path: Path) -> tuple[ReplayCheckpoint | None, KnownHead | None]:
    """The side file of a session file being opened, and what it tells the loader about the
    file's head (``clean_head``; ``None``: nothing)."""
    checkpoint = read_checkpoint(checkpoint_path(session_path))
    if checkpoint is None or checkpoint.clean is None:
        return checkpoint, None
    return checkpoint, KnownHead(checkpoint.clean, (checkpoint.file_bytes, checkpoint.file_crc))


def _file_prefix_crc(
    path: Path, length: int, state: tuple[int, int], known: tuple[int, int] = (0, 0)
) -> int | None:
    """CRC-32 of the first ``length`` bytes, if the file is still the one of ``state``
    (inode, size) before and after reading. ``known``: the CRC of a shorter prefix
    (``(bytes, crc)``) to carry forward: only the bytes after it are read."""
    start, crc = known if known[0] <= length else (0, 0)
    try:
        with open(path, "rb") as handle:
            before = os.fstat(handle.fileno())
            if (before.st_ino, before.st_size) != state:
                return None
            handle.seek(start)
            data = handle.read(length - start)
            after = os.fstat(handle.fileno())
    except OSError:
        return None
    if len(data) != length - start or (after.st_ino, after.st_size) != state:
        return None
    return zlib.crc32(data, crc)


def _sources_digest(
    messages: Sequence[Any], entries: Sequence[Any], cache: Mapping[int, Any]
) -> str | None:
    """``ids_digest`` of the entry among ``entries`` each message was made from (``cache``:
    ``id(entry)`` → message), or ``None`` when one was not made from any of them."""
    # the common case, a branch that is the file's order: one walk, no look-up tables, each
    # source's id read while the walk is on it (not in a second walk over the sources)
    lines = []
    walk = iter(entries)
    for message in messages:
        for entry in walk:
            if cache.get(id(entry)) is message:
                lines.append(f"{entry.get('id')}\n")
                break
        else:
            sources = _sources_by_tables(messages, entries, cache)
            return None if sources is None else ids_digest(sources)
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def _sources_by_tables(
    messages: Sequence[Any], entries: Sequence[Any], cache: Mapping[int, Any]
) -> list[Any] | None:
    """The entry among ``entries`` each message was made from, for any branch order, through
    look-up tables (``None``: one was not made from any of them)."""
    by_key = {id(entry): entry for entry in entries}
    entry_of = {id(m): by_key[k] for k, m in cache.items() if m is not None and k in by_key}
    out = []
    for message in messages:
        entry = entry_of.get(id(message))
        if entry is None:
            return None
        out.append(entry)
    return out


class CheckpointSource(Protocol):
    """What the checkpointer reads from an open session (``transcript.reader.SessionReader``)."""

    @property
    def path(self) -> Path: ...

    def replay_sources(self) -> tuple[list[dict[str, Any]], tuple[int, int], dict[int, Any]]:
        """Every entry in file order, the file's (inode, size) they were read from, and the
        message cache (``id(entry)`` → its message)."""
        ...

    def clean_head(self) -> CleanHead | None:
        """The clean head of the bytes the session's entries were loaded from (``None``:
        not loaded from a file, or none)."""
        ...


def _nothing() -> None:
    """The referent of a disabled checkpointer's references: none (no weak reference per
    session that keeps no checkpoint: memory and Redis sessions)."""
    return None


class ReplayCheckpointer:
    """Restores one session's sanitizer from its side file, and records it back.

    ``restore`` is called by the session's ``IncrementalSanitizer`` when it has nothing
    cached (a cold start); ``record`` by the session after its lines reached the file.
    The session and the sanitizer are held weakly: the session holds this object, and a
    reference back would make every closed session cyclic garbage (its whole history kept
    until a full collection of the cyclic GC, which then scans it).
    """

    def __init__(
        self, source: CheckpointSource, sanitizer: IncrementalSanitizer, *, enabled: bool = True
    ) -> None:
        #: False for sessions that are not a file (Redis, memory): no side file is read or
        #: written, and the sanitizer starts empty after a restart as before.
        self.enabled = enabled
        self._source_ref: Callable[[], CheckpointSource | None] = _nothing
        self._sanitizer_ref: Callable[[], IncrementalSanitizer | None] = _nothing
        if enabled:  # a disabled one never reads them (each entry point returns first)
            self._source_ref = weakref.ref(source)
            self._sanitizer_ref = weakref.ref(sanitizer)
        self._tried = False
        self._recorded: tuple[str, int] | None = None
        #: the side file as this object first read it (``_UNREAD``: not read yet)
        self._checkpoint: object = _UNREAD
        #: the leading messages found to be the checkpoint's (same objects, same entries)
        self._verified: list[Any] | None = None
        #: (inode, bytes, CRC) of the file's head as last checked or recorded
        self._crc: tuple[int, int, int] | None = None
        #: How many messages the cold start took from the side file (0: none).
        self.restored = 0
        #: Set by the runner (``runner.history_tokens``): the token estimate of a prefix of
        #: the history as ``(scheme, tokens)``, recorded with it (``None``: not known).
        self.prefix_tokens: Callable[[Sequence[Any]], tuple[str, int] | None] | None = None
        #: the call ids of the prefix the cold start took (for ``restored_ids``, once)
        self._restored_ids: set[str] | None = None
        if enabled:
            sanitizer.restore = self.restore
            sanitizer.restored_ids = self.restored_ids

    @property
    def _source(self) -> CheckpointSource:
        source = self._source_ref()
        if source is None:
            raise RuntimeError("the session of this replay checkpoint is gone")
        return source

    @property
    def _sanitizer(self) -> IncrementalSanitizer:
        sanitizer = self._sanitizer_ref()
        if sanitizer is None:
            raise RuntimeError("the sanitizer of this replay checkpoint is gone")
        return sanitizer

    def restore(self, messages: Sequence[Any], key: tuple[Any, ...]) -> int:
        """How many leading ``messages`` are known to sanitize to themselves (0: none)."""
        if self._tried:
            return 0
        self._tried = True
        checkpoint = self._load()
        if checkpoint is None:
            return 0
        count = checkpoint.messages
        fingerprint = key_fingerprint(key)
        why = _mismatch(checkpoint, fingerprint, len(messages))
        if why is None:
            why = self._prefix_problem(checkpoint, messages)
        if why is None and not boundary_holds_after(messages, count):
            why = "the checkpoint is no longer a stable boundary"
        if why is not None:
            logger.debug("replay checkpoint of %s not used: %s", self._source.path.name, why)
            return 0
        self._recorded = (fingerprint, count)
        self.restored = count
        if checkpoint.call_ids is not None:
            self._restored_ids = set(checkpoint.call_ids)
        return count

    def restored_ids(self) -> set[str] | None:
        """The tool-call ids of the prefix ``restore`` took, when the side file kept them
        (``None``: not kept); handed out once."""
        ids, self._restored_ids = self._restored_ids, None
        return ids

    def known_tokens(self, messages: Sequence[Any], scheme: str) -> tuple[int, int] | None:
        """``(n, tokens)``: the checkpoint's first ``n`` messages are ``messages[:n]`` and
        their token estimates, by ``scheme``, sum to ``tokens``; ``None`` when not known."""
        if not self.enabled:
            return None
        checkpoint = self._load()
        if checkpoint is None or checkpoint.tokens is None or checkpoint.token_scheme != scheme:
            return None
        if not 0 < checkpoint.messages <= len(messages):
            return None
        why = self._prefix_problem(checkpoint, messages)
        if why is not None:
            logger.debug("replay checkpoint tokens of %s not used: %s", self._source.path.name, why)
            return None
        return checkpoint.messages, checkpoint.tokens

    def start_empty(self) -> None:
        """The session's file was just created by this process (``create_exclusive``), so no
        side file describes it: none is read (a fresh session's run skipped an ``open`` that
        fails). A side file left at the name by an earlier session file of the same id
        describes other bytes (its header's timestamp, its entries' random ids): ``restore``
        would reject it, so reading it or not gives the same answers; ``record`` replaces it."""
        if self._checkpoint is _UNREAD:
            self._checkpoint = None

    def read_already(self, checkpoint: ReplayCheckpoint | None) -> None:
        """The side file as the session's opening read it (for its clean head): not read
        again."""
        if self._checkpoint is _UNREAD:
            self._checkpoint = checkpoint

    def _load(self) -> ReplayCheckpoint | None:
        """The side file, read once (a cold start asks for it twice)."""
        if self._checkpoint is _UNREAD:
            self._checkpoint = read_checkpoint(checkpoint_path(self._source.path))
        return self._checkpoint if isinstance(self._checkpoint, ReplayCheckpoint) else None

    def _prefix_problem(self, checkpoint: ReplayCheckpoint, messages: Sequence[Any]) -> str | None:
        """Why ``messages`` do not start with the checkpoint's messages made from the same
        entries of the unchanged file head (``None``: they do); checked once per objects."""
        count = checkpoint.messages
        verified = self._verified
        if (
            verified is not None
            and len(verified) == count <= len(messages)
            and all(map(operator.is_, verified, messages[:count]))
        ):
            return None
        entries, state, cache = self._source.replay_sources()
        if len(entries) < checkpoint.entries or state[1] < checkpoint.file_bytes:
            return "the session is shorter than when it was recorded"
        head = self._source.clean_head()
        # the bytes the entries were loaded from start so: the file need not be read again
        proven = head is not None and head.checked == (checkpoint.file_bytes, checkpoint.file_crc)
        if not proven and checkpoint.file_crc != _file_prefix_crc(
            self._source.path, checkpoint.file_bytes, state
        ):
            return "the session file changed"
        self._crc = (state[0], checkpoint.file_bytes, checkpoint.file_crc)
        why = _check_messages(checkpoint, messages, entries, cache)
        if why is None:
            self._verified = list(messages[:count])
        return why

    def due(self) -> bool:
        """Whether the sanitized prefix moved on since the last record (or restore)."""
        if not self.enabled:
            return False
        found = self._sanitizer.stable_prefix()
        if found is None:
            return False
        recorded = self._recorded
        return recorded is None or len(found[1]) != recorded[1]

    def record(self, *, force: bool = False) -> None:
        """Write the side file if the sanitized prefix moved enough since the last record
        (any move with ``force``). Call with every line flushed, under the session lock."""
        if not self.enabled:
            return
        recorded = self._recorded
        if recorded is not None and not force:
            # cheap before the O(n) look at the prefix: it cannot have moved far enough
            step = self._sanitizer.cached_length - recorded[1]
            if step < max(_MIN_STEP, recorded[1] // _STEP_SHARE):
                return
        found = self._sanitizer.stable_prefix()
        if found is None:
            return
        key, prefix = found
        fingerprint = key_fingerprint(key)
        if recorded is not None and recorded[0] == fingerprint:
            step = len(prefix) - recorded[1]
            if step <= 0 or (not force and step < max(_MIN_STEP, recorded[1] // _STEP_SHARE)):
                return
        entries, state, cache = self._source.replay_sources()
        digest = _sources_digest(prefix, entries, cache)
        if digest is None:
            return
        head = self._source.clean_head()
        clean = None if head is None else head.fact()
        known = self._crc
        if known is not None and known[0] == state[0]:
            carried = (known[1], known[2])
        else:  # the head of the bytes the entries were loaded from, if any
            carried = (0, 0) if clean is None else clean
        crc = _file_prefix_crc(self._source.path, state[1], state, carried)
        if crc is None:
            return
        counted = None if self.prefix_tokens is None else self.prefix_tokens(prefix)
        scheme, tokens = counted if counted is not None else (None, None)
        call_ids = self._sanitizer.prefix_call_ids(prefix)
        checkpoint = ReplayCheckpoint(
            fingerprint,
            len(prefix),
            len(entries),
            state[1],
            crc,
            digest,
            tokens,
            scheme,
            tuple(sorted(call_ids)),
            clean,
        )
        try:
            write_checkpoint(checkpoint_path(self._source.path), checkpoint)
        except OSError as exc:
            logger.warning("could not record the replay checkpoint: %s", type(exc).__name__)
            return
        self._recorded = (fingerprint, len(prefix))
        self._crc = (state[0], state[1], crc)


def _mismatch(checkpoint: ReplayCheckpoint, fingerprint: str, available: int) -> str | None:
    """Why the checkpoint cannot apply before looking at the file (``None``: it may)."""
    if checkpoint.fingerprint != fingerprint:
        return "another policy, sanitizer set or version"
    if checkpoint.messages == 0 or checkpoint.messages >= available:
        return "the history is not longer than the checkpoint"
    return None


def _check_messages(
    checkpoint: ReplayCheckpoint,
    messages: Sequence[Any],
    entries: list[Any],
    cache: Mapping[int, Any],
) -> str | None:
    count = checkpoint.messages
    digest = _sources_digest(messages[:count], entries[: checkpoint.entries], cache)
    if digest is None:
        return "a message not made from an entry the checkpoint covers"
    if digest != checkpoint.ids_digest:
        return "the history starts with other entries"
    return None
