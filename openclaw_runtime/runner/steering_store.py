"""The steering stores: where sub-agent results wait for their requester's next turn.

``RecordsSteeringStore`` implements the ``SteeringStore`` protocol (``backends.steering``) on
top of one atomic ``update(fn)`` over every record, so a store that can apply a function to
all records atomically runs exactly the queue's lease / ack / release policy (``steering``)
and implements ``load`` and ``update`` only. Two such stores ship: ``InMemorySteeringStore``
for one process, and ``JsonFileSteeringStore`` — a JSON file guarded by a file lock and
replaced atomically — for several processes on one machine (a damaged file is set aside, a
record that does not validate is skipped with a warning, secrets are redacted before writing).
"""

from __future__ import annotations

import copy
import logging
import os
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import anyio
import filelock
import orjson
from pydantic import ValidationError

from .._files import DamagedStateFile, atomic_write, load_or_set_aside, remove_stale_temps
from ..backends.steering import (
    Runs,
    SteeringLease,
    SteeringStoreError,
    SubagentRunRecord,
)
from ..redaction import contains_secret, package_logger, redact_data
from .live_inbox import FileLiveInbox
from .steering import (
    ack_leased_agent_steering_items_from_subagent_runs,
    lease_pending_agent_steering_items_from_subagent_runs,
    release_leased_agent_steering_items_from_subagent_runs,
)

__all__ = ["InMemorySteeringStore", "JsonFileSteeringStore", "RecordsSteeringStore"]

#: The steering queue's logger: its stores log under the queue's name.
logger = package_logger(logging.getLogger("openclaw_runtime.runner.steering"))


T = TypeVar("T")


class RecordsSteeringStore:
    """``SteeringStore`` operations on top of one atomic ``update(fn)`` over every record.

    A store that can apply a function to all records atomically (a locked file, a lock in
    memory) inherits lease / ack / release / put from here and so runs exactly the policy
    above; it implements ``load`` and ``update`` only.
    """

    async def load(self) -> Runs:
        raise NotImplementedError

    async def update(self, fn: Callable[[Runs], T]) -> T:
        """Apply ``fn`` to the freshest records atomically and persist what it changed.

        ``fn`` is synchronous, mutates the dict it gets and returns a value, which ``update``
        returns. If ``fn`` raises, nothing is written.
        """
        raise NotImplementedError

    async def put(self, record: SubagentRunRecord) -> None:
        snapshot = record.model_copy(deep=True)

        def put(runs: Runs) -> None:
            runs[snapshot.run_id] = snapshot.model_copy(deep=True)

        await self.update(put)

    async def lease(
        self, requester_session_key: str, *, now_ms: float, lease_id: str | None = None
    ) -> SteeringLease | None:
        lease = lease_id or uuid.uuid4().hex

        def apply(runs: Runs) -> SteeringLease | None:
            batch = lease_pending_agent_steering_items_from_subagent_runs(
                runs, requester_session_key=requester_session_key, lease_id=lease, now_ms=now_ms
            )
            if batch is None:
                return None
            return SteeringLease(
                lease_id=lease,
                prompt=batch.prompt,
                run_ids=batch.run_ids,
                items=tuple(runs[run_id].model_copy(deep=True) for run_id in batch.run_ids),
            )

        return await self.update(apply)

    async def ack(self, lease: SteeringLease, *, now_ms: float) -> int:
        def apply(runs: Runs) -> int:
            return ack_leased_agent_steering_items_from_subagent_runs(
                runs, run_ids=lease.run_ids, lease_id=lease.lease_id, now_ms=now_ms
            )

        return await self.update(apply)

    async def release(self, lease: SteeringLease, *, error: str | None = None) -> int:
        def apply(runs: Runs) -> int:
            return release_leased_agent_steering_items_from_subagent_runs(
                runs, run_ids=lease.run_ids, lease_id=lease.lease_id, error=error
            )

        return await self.update(apply)


class InMemorySteeringStore(RecordsSteeringStore):
    """Records in this process (tests, single-process runtimes)."""

    def __init__(self, records: Sequence[SubagentRunRecord] = ()) -> None:
        self._runs: Runs = {record.run_id: record.model_copy(deep=True) for record in records}
        self._lock = threading.Lock()

    async def load(self) -> Runs:
        with self._lock:
            return copy.deepcopy(self._runs)

    async def update(self, fn: Callable[[Runs], T]) -> T:
        with self._lock:
            working = copy.deepcopy(self._runs)
            result = fn(working)
            self._runs = working
            return result

    async def lease(
        self, requester_session_key: str, *, now_ms: float, lease_id: str | None = None
    ) -> SteeringLease | None:
        """No records, nothing to lease: asked by every run, answered without copying the
        (empty) records and making a lease id nobody gets; otherwise the general lease."""
        if not self._runs:
            return None
        return await super().lease(requester_session_key, now_ms=now_ms, lease_id=lease_id)

    def __repr__(self) -> str:
        return f"InMemorySteeringStore(runs={len(self._runs)})"


class JsonFileSteeringStore(RecordsSteeringStore):
    """Records in one JSON file, safe for many processes on one machine.

    Updates hold ``<file>.lock`` while they read, apply and write; the file is replaced
    whole (temp file + fsync + ``os.replace``), so readers never see half a write. A stored
    record that cannot be parsed is logged and carried through untouched, never dropped; a
    file that cannot be parsed at all is set aside (``runs.json.corrupt-<time>-<pid>``, with a
    warning) and the queue starts empty.
    """

    def __init__(self, path: str | os.PathLike[str], *, lock_timeout: float = 30.0) -> None:
        self.path = Path(path).expanduser()
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.lock_timeout = lock_timeout
        self._swept = False  # stale temp files of dead writers removed (once, at first read)
        #: steer / follow-up messages for runs of other processes (``<dir>/live/``)
        self.live_inbox = FileLiveInbox(self.path.parent / "live", lock_timeout=lock_timeout)

    def __repr__(self) -> str:
        return f"JsonFileSteeringStore({str(self.path)!r})"

    @staticmethod
    def _parse(data: bytes) -> dict[str, Any]:
        if not data.strip():
            return {}
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise DamagedStateFile(f"not valid JSON ({exc})") from None
        if not isinstance(document, dict) or not isinstance(document.get("runs"), dict):
            raise DamagedStateFile('not an object with a "runs" object')
        return document

    def _file_lock(self) -> filelock.FileLock:
        return filelock.FileLock(self.lock_path, timeout=self.lock_timeout, mode=0o600)

    def _read(self, *, locked: bool = False) -> tuple[dict[str, Any], Runs, dict[str, Any]]:
        if not self._swept:
            self._swept = True
            remove_stale_temps(self.path.parent, [self.path.name])
        try:
            document: dict[str, Any] = load_or_set_aside(
                self.path,
                self._parse,
                dict,
                what="steering store",
                logger=logger,
                lock=None if locked else self._file_lock,
            )
        except OSError as exc:
            raise SteeringStoreError(
                f"cannot read steering store {str(self.path)!r}: {exc.strerror}"
            ) from None
        except filelock.Timeout:
            raise SteeringStoreError(
                f"timed out after {self.lock_timeout}s waiting for {str(self.lock_path)!r}"
            ) from None
        raw_runs = document.get("runs") or {}
        runs: Runs = {}
        unreadable: dict[str, Any] = {}
        for run_id, raw in raw_runs.items():
            try:
                runs[str(run_id)] = SubagentRunRecord.model_validate(raw)
            except ValidationError as exc:
                logger.warning(
                    "keeping unreadable steering record %r aside: %s",
                    run_id,
                    exc.errors()[0].get("msg", "invalid"),
                )
                unreadable[str(run_id)] = raw
        return document, runs, unreadable

    def _write(self, document: dict[str, Any]) -> None:
        payload = orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
        if contains_secret(payload):  # sub-agent results are text from models and tools
            payload = orjson.dumps(redact_data(document), option=orjson.OPT_INDENT_2) + b"\n"
        try:
            atomic_write(self.path, payload, tag="steering")
        except OSError as exc:
            raise SteeringStoreError(
                f"cannot write steering store {str(self.path)!r}: {exc.strerror}"
            ) from None

    def load_sync(self) -> Runs:
        """Blocking ``load``."""
        return self._read()[1]

    def update_sync(self, fn: Callable[[Runs], T]) -> T:
        """Blocking ``update``: lock, read, apply ``fn``, write atomically, unlock."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SteeringStoreError(
                f"cannot create directory {str(self.path.parent)!r}: {exc.strerror}"
            ) from None
        try:
            with self._file_lock():
                document, runs, unreadable = self._read(locked=True)
                before = {run_id: record.to_dict() for run_id, record in runs.items()}
                result = fn(runs)
                after = {run_id: record.to_dict() for run_id, record in runs.items()}
                if after != before:
                    self._write({**document, "version": 1, "runs": {**unreadable, **after}})
                return result
        except filelock.Timeout:
            raise SteeringStoreError(
                f"timed out after {self.lock_timeout}s waiting for {str(self.lock_path)!r}"
            ) from None

    async def load(self) -> Runs:
        return await anyio.to_thread.run_sync(self.load_sync)

    async def lease(
        self, requester_session_key: str, *, now_ms: float, lease_id: str | None = None
    ) -> SteeringLease | None:
        if not self.path.exists():
            return None  # nothing was ever queued: no lock, no read
        return await super().lease(requester_session_key, now_ms=now_ms, lease_id=lease_id)

    async def update(self, fn: Callable[[Runs], T]) -> T:
        return await anyio.to_thread.run_sync(self.update_sync, fn)
