"""Sessions on Redis: the transcript every worker reads and continues, with no shared disk.

A session is a Redis list, ``<prefix>session:<id>:lines``, holding exactly the JSONL lines the
file store writes (``transcript/jsonl.py encode_record``, header first), plus a generation
counter ``:gen`` that a whole rewrite (sanitising, compaction) bumps. So the JSONL export of a
Redis session is the concatenation of its list, byte for byte what the file store would hold,
and ``import_jsonl`` moves a file session in.

``RedisSessionManager`` is the core ``SessionManager`` (the entry tree, branches, context
building and every ``append_*`` are inherited) with its I/O moved to Redis:

* an append is one Lua script that first checks the caller's **fencing token** (the Redis
  session lane this task holds, ``lanes.current_fences``), then that nobody appended since
  our last read (list length + generation); on a mismatch it returns, and the manager reads the
  other workers' lines, joins them to its tree and retries — the Redis twin of "re-read the
  tail under the lock before appending";
* a stale token (the worker stalled past its lease and another worker took the session) is
  refused with ``StaleFencingTokenError``: the late write never lands;
* ``refresh()`` costs one round trip (``LLEN`` + ``GET gen``) when nothing changed.

The session index is a hash ``<prefix>sessions:index`` (key → ``{"sessionId","updatedAt"}``)
claimed with ``HSETNX``, so two first turns of one conversation on two machines end up in one
session.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import orjson

from openclaw_runtime import TranscriptError
from openclaw_runtime.transcript.entries import iso_timestamp, make_header
from openclaw_runtime.transcript.jsonl import encode_record, parse_session_bytes
from openclaw_runtime.transcript.load import ExternalChanges, parse_appended
from openclaw_runtime.transcript.repair import plan_session_repair
from openclaw_runtime.transcript.rewrite import checked_rewrite_records
from openclaw_runtime.transcript.session_ids import validate_session_id
from openclaw_runtime.transcript.store import SessionManager
from openclaw_runtime.transcript.tree import SessionTree

from ._conn import RedisConnection
from .lanes import FENCE_CHECK, StaleFencingTokenError, current_fences, fence_args

__all__ = ["RedisSessionIndex", "RedisSessionManager", "RedisSessionStore"]

Warn = Callable[[str], None]
Clock = Callable[[], datetime]

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nfences = (#KEYS - 2) / 2
"""

# KEYS: fence pairs..., lines, gen ; ARGV: fence pairs..., expected_gen, expected_len, lines...
APPEND: Final = (
    _NOW
    + FENCE_CHECK
    + """
local lines, genk = KEYS[#KEYS - 1], KEYS[#KEYS]
local base = 2 * nfences
local gen = tonumber(redis.call('GET', genk) or '0')
if gen ~= tonumber(ARGV[base + 1]) then return {-2, gen} end
local len = redis.call('LLEN', lines)
if len == 0 then return {-3} end
local expected = tonumber(ARGV[base + 2])
if expected >= 0 and len ~= expected then return {-4, len} end
for i = base + 3, #ARGV do len = redis.call('RPUSH', lines, ARGV[i]) end
return {0, len}
"""
)

# KEYS: fence pairs..., lines, gen ; ARGV: fence pairs..., header, lines...
REWRITE: Final = (
    _NOW
    + FENCE_CHECK
    + """
local lines, genk = KEYS[#KEYS - 1], KEYS[#KEYS]
local base = 2 * nfences
if redis.call('LLEN', lines) == 0 then return {-3} end
redis.call('DEL', lines)
local len = 0
for i = base + 1, #ARGV do len = redis.call('RPUSH', lines, ARGV[i]) end
local gen = redis.call('INCR', genk)
return {0, len, gen}
"""
)

# KEYS: lines, all ; ARGV: header line, session id
CREATE: Final = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[2])
return 1
"""


def _tree_from_lines(lines: list[bytes], name: str) -> SessionTree:
    parsed = parse_session_bytes(b"".join(lines))
    if parsed.header_problem is not None or parsed.header is None:
        raise TranscriptError(f"cannot load Redis session {name}: {parsed.header_problem}")
    plan = plan_session_repair(parsed, keep_error_turns=True)  # in memory only
    tree = SessionTree.build(parsed.header, plan.entries)
    tree.repair_pointers()
    return tree


class RedisSessionManager(SessionManager):
    """``SessionManager`` whose transcript lives in a Redis list (see the module doc)."""

    keeps_replay_checkpoint = False  # not a file: no side file beside it

    def __init__(
        self,
        conn: RedisConnection,
        session_id: str,
        tree: SessionTree,
        *,
        state: tuple[int, int],
        durability: Any = "none",
        now: Clock | None = None,
        warn: Warn | None = None,
    ) -> None:
        super().__init__(
            Path(f"{session_id}.jsonl"),
            tree,
            durability=durability,
            now=now,
            warn=warn,
            file_state=state,
        )
        self.conn = conn
        self.lines_key = conn.key("session", session_id, "lines")
        self.gen_key = conn.key("session", session_id, "gen")
        self._append_script = conn.script(APPEND)
        self._rewrite_script = conn.script(REWRITE)

    # (generation, list length) after our last read or write lives in ``_file_state``

    @classmethod
    async def load(
        cls,
        conn: RedisConnection,
        session_id: str,
        *,
        durability: Any = "none",
        now: Clock | None = None,
        warn: Warn | None = None,
    ) -> RedisSessionManager:
        """Read a whole session from Redis (``TranscriptError`` if it does not exist)."""
        lines, gen = await _read_all(conn, session_id)
        if not lines:
            raise TranscriptError(f"session {session_id} does not exist in Redis")
        tree = _tree_from_lines(lines, session_id)
        return cls(
            conn,
            session_id,
            tree,
            state=(gen, len(lines)),
            durability=durability,
            now=now,
            warn=warn,
        )

    async def refresh(self) -> bool:
        if self.closed:
            raise TranscriptError(f"session {self.path.name} is closed")
        client = self.conn.client
        async with client.pipeline(transaction=True) as pipe:
            pipe.get(self.gen_key)
            pipe.llen(self.lines_key)
            raw_gen, length = await pipe.execute()
        if length == 0:
            raise TranscriptError(f"session {self.session_id} was removed from Redis")
        if (int(raw_gen or 0), int(length)) == self._file_state and not self._pending:
            return False
        await self.flush()
        async with self._write_lock:
            self._absorb(await self._read_external())
        return True

    async def _read_external(self) -> ExternalChanges:
        gen, size = self._file_state
        client = self.conn.client
        async with client.pipeline(transaction=True) as pipe:
            pipe.get(self.gen_key)
            pipe.lrange(self.lines_key, size, -1)
            raw_gen, delta = await pipe.execute()
        if int(raw_gen or 0) != gen:
            lines, new_gen = await _read_all(self.conn, self.session_id)
            self._file_state = (new_gen, len(lines))
            return ExternalChanges(tree=_tree_from_lines(lines, self.session_id))
        if not delta:
            return ExternalChanges()
        self._file_state = (gen, size + len(delta))
        entries, _ = parse_appended(b"".join(delta))
        return ExternalChanges(entries=entries)

    async def _push(
        self, lines: list[bytes], *, expected_len: int, gen: int | None = None
    ) -> tuple[int, int]:
        """Run APPEND (on generation ``gen``, by default the one last read); returns
        (status, value) with fence refusal raised."""
        keys, args = fence_args(current_fences())
        status, *rest = await self._append_script(
            keys=[*keys, self.lines_key, self.gen_key],
            args=[*args, self._file_state[0] if gen is None else gen, expected_len, *lines],
        )
        status = int(status)
        if status == -1:
            raise StaleFencingTokenError(f"an append to session {self.session_id}")
        if status == -3:
            raise TranscriptError(f"session {self.session_id} was removed from Redis")
        return status, int(rest[0]) if rest else 0

    async def _append_durably(
        self, kind: str, payload: dict[str, Any], append_mode: str | None, parent: str | None
    ) -> str:
        while True:
            entry = self._new_entry(kind, payload, append_mode, parent)
            status, value = await self._push(
                [encode_record(entry)], expected_len=self._file_state[1]
            )
            if status == 0:
                self._file_state = (self._file_state[0], value)
                self._record([entry])
                return str(entry["id"])
            # another worker appended (or rewrote): join its lines, then try again
            self._absorb(await self._read_external())

    async def flush(self) -> None:
        """Push the buffered lines. They leave the buffer only once pushed: a push that
        fails (or is cancelled) keeps them for the next flush. A push whose reply was lost
        may have landed all the same, so when the list is not as we left it the lines
        already in it are not pushed again (``_landed``)."""
        async with self._write_lock:
            pending = self._pending
            if not pending:
                return
            payload = list(pending)
            status, value = await self._push(payload, expected_len=self._file_state[1])
            if status == 0:
                del pending[: len(payload)]
                self._file_state = (self._file_state[0], value)
                return
            # others wrote while we buffered (or rewrote): their lines go first, ours after
            # (the state and tree change only once ours are in: until then, what others
            # wrote is read again by the next flush or refresh)
            while True:
                lines, gen = await _read_all(self.conn, self.session_id)
                rest = payload[_landed(lines, payload) :]
                if not rest:
                    break
                status, _ = await self._push(rest, expected_len=len(lines), gen=gen)
                if status == 0:
                    lines += rest
                    break
            del pending[: len(payload)]
            self._file_state = (gen, len(lines))
            self._tree = _tree_from_lines(lines, self.session_id)
            self._branch_cache = self._context_cache = None
            self._message_cache.clear()

    async def rewrite_entries(self, entries: list[dict[str, Any]]) -> None:
        records = checked_rewrite_records(entries)
        async with self._write_lock:
            if self._pending:
                raise TranscriptError("flush() buffered appends before rewriting the session")
            lines = [encode_record(self._tree.header), *map(encode_record, records)]
            keys, args = fence_args(current_fences())
            status, *rest = await self._rewrite_script(
                keys=[*keys, self.lines_key, self.gen_key], args=[*args, *lines]
            )
            if int(status) == -1:
                raise StaleFencingTokenError(f"a rewrite of session {self.session_id}")
            if int(status) == -3:
                raise TranscriptError(f"session {self.session_id} was removed from Redis")
            self._file_state = (int(rest[1]), int(rest[0]))
            tree = SessionTree.build(self._tree.header, records)
            for problem in tree.repair_pointers():
                self._report(f"session {self.session_id}: {problem}")
            self._tree = tree
            self._branch_cache = self._context_cache = None
            self._message_cache.clear()


def _landed(lines: list[bytes], payload: list[bytes]) -> int:
    """How many of ``payload``'s first lines ``lines`` holds already: a push of them whose
    reply was lost (a dropped connection, a cancelled flush) landed all the same. One
    script pushes its lines together, so they are one run; every line holds its entry's
    unique id, so an equal line is ours."""
    try:
        start = lines.index(payload[0])
    except ValueError:
        return 0
    count = 0
    for have, want in zip(lines[start:], payload, strict=False):
        if have != want:
            break
        count += 1
    return count


async def _read_all(conn: RedisConnection, session_id: str) -> tuple[list[bytes], int]:
    async with conn.client.pipeline(transaction=True) as pipe:
        pipe.lrange(conn.key("session", session_id, "lines"), 0, -1)
        pipe.get(conn.key("session", session_id, "gen"))
        lines, raw_gen = await pipe.execute()
    return list(lines), int(raw_gen or 0)


class RedisSessionStore:
    """Sessions by id on Redis; same calls as ``JsonlSessionStore`` (exists/list are async)."""

    def __init__(
        self,
        conn: RedisConnection,
        *,
        durability: Any = "none",
        now: Clock | None = None,
        warn: Warn | None = None,
    ) -> None:
        self.conn = conn
        self.durability = durability
        self._now = now
        self._warn = warn
        self._create = conn.script(CREATE)
        self.all_key = conn.key("sessions", "all")

    def __repr__(self) -> str:
        return f"RedisSessionStore(prefix={self.conn.prefix!r})"

    async def exists(self, session_id: str) -> bool:
        """Whether the session is in Redis."""
        key = self.conn.key("session", validate_session_id(session_id), "lines")
        return bool(await self.conn.client.exists(key))

    async def list_ids(self) -> list[str]:
        """Every session id, sorted."""
        return sorted(_text(m) for m in await self.conn.client.smembers(self.all_key))

    async def create(
        self, session_id: str, *, cwd: str, parent_session: str | None = None
    ) -> RedisSessionManager:
        """Create a session holding only its header (``TranscriptError`` if it exists)."""
        safe = validate_session_id(session_id)
        clock = self._now or (lambda: datetime.now(UTC))
        header = make_header(
            safe, cwd, parent_session=parent_session, timestamp=iso_timestamp(clock())
        )
        line = encode_record(header)
        created = await self._create(
            keys=[self.conn.key("session", safe, "lines"), self.all_key], args=[line, safe]
        )
        if not int(created):
            raise TranscriptError(f"session {safe} already exists in Redis")
        return RedisSessionManager(
            self.conn,
            safe,
            SessionTree.build(header, []),
            state=(0, 1),
            durability=self.durability,
            now=self._now,
            warn=self._warn,
        )

    async def open(self, session_id: str, *, repair: bool = True) -> RedisSessionManager:
        """Open an existing session (``repair`` has nothing to do: only whole lines are stored)."""
        return await RedisSessionManager.load(
            self.conn,
            validate_session_id(session_id),
            durability=self.durability,
            now=self._now,
            warn=self._warn,
        )

    async def open_or_create(self, session_id: str, *, cwd: str) -> RedisSessionManager:
        """Open a session, creating it first when it does not exist."""
        safe = validate_session_id(session_id)
        if not await self.exists(safe):
            try:
                return await self.create(safe, cwd=cwd)
            except TranscriptError:
                pass  # another worker created it first: open theirs
        return await self.open(safe)

    async def export_jsonl(self, session_id: str) -> bytes:
        """The session as JSONL, byte-compatible with the file store's ``<id>.jsonl``."""
        lines, _ = await _read_all(self.conn, validate_session_id(session_id))
        if not lines:
            raise TranscriptError(f"session {session_id} does not exist in Redis")
        return b"".join(lines)

    async def import_jsonl(self, data: bytes) -> str:
        """Store a file-store session (its JSONL bytes) in Redis; returns its id.

        Lines that do not parse are refused with their line number: nothing is lost silently.
        """
        parsed = parse_session_bytes(data)
        if parsed.header is None or parsed.header_problem is not None:
            raise TranscriptError(f"cannot import session: {parsed.header_problem}")
        if parsed.invalid:
            raise TranscriptError(
                f"cannot import session: {len(parsed.invalid)} line(s) do not parse "
                "(repair the file first: open it with the file store)"
            )
        safe = validate_session_id(str(parsed.header["id"]))
        lines = [encode_record(parsed.header), *(encode_record(e) for e in parsed.entries)]
        created = await self._create(
            keys=[self.conn.key("session", safe, "lines"), self.all_key], args=[lines[0], safe]
        )
        if not int(created):
            raise TranscriptError(f"session {safe} already exists in Redis")
        if len(lines) > 1:
            await self.conn.client.rpush(self.conn.key("session", safe, "lines"), *lines[1:])
        return safe


class RedisSessionIndex:
    """Session key → session id for every worker (a hash; ``claim`` is ``HSETNX``)."""

    def __init__(self, conn: RedisConnection) -> None:
        self.conn = conn
        self.key = conn.key("sessions", "index")

    def __repr__(self) -> str:
        return f"RedisSessionIndex(key={self.key!r})"

    @staticmethod
    def _entry(session_id: str) -> bytes:
        return orjson.dumps({"sessionId": session_id, "updatedAt": int(time.time() * 1000)})

    async def lookup_id(self, session_key: str) -> str | None:
        """The session id bound to ``session_key``."""
        raw = await self.conn.client.hget(self.key, session_key)
        return _session_id(raw)

    async def lookup_key(self, session_id: str) -> str | None:
        """The most recently updated key bound to ``session_id``."""
        best: tuple[float, str] | None = None
        for key, entry in (await self.entries()).items():
            if entry.get("sessionId") == session_id:
                updated = float(entry.get("updatedAt") or 0)
                if best is None or updated > best[0]:
                    best = (updated, key)
        return best[1] if best else None

    async def entries(self) -> dict[str, dict[str, Any]]:
        """The whole index (entries that do not parse are left out, not deleted)."""
        out: dict[str, dict[str, Any]] = {}
        for key, raw in (await self.conn.client.hgetall(self.key)).items():
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict):
                out[_text(key)] = value
        return out

    async def claim(self, session_key: str, session_id: str) -> str:
        """Bind ``session_key`` to ``session_id`` unless it is bound; returns the bound id."""
        async with self.conn.client.pipeline(transaction=True) as pipe:
            pipe.hsetnx(self.key, session_key, self._entry(session_id))
            pipe.hget(self.key, session_key)
            _, raw = await pipe.execute()
        bound = _session_id(raw)
        if bound is None:
            raise TranscriptError(f"session index entry for {session_key!r} is unreadable")
        return bound

    async def bind(self, session_key: str, session_id: str) -> None:
        """Point ``session_key`` at ``session_id``."""
        if await self.lookup_id(session_key) != session_id:
            await self.conn.client.hset(self.key, session_key, self._entry(session_id))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _session_id(raw: bytes | str | None) -> str | None:
    if raw is None:
        return None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    sid = value.get("sessionId") if isinstance(value, dict) else None
    return sid if isinstance(sid, str) else None
