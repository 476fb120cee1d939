"""OpenClaw's ``auth-profiles.json``: the default auth-profile store, one JSON file.

``JsonFileAuthProfileStore`` is one JSON file guarded by a file lock, replaced atomically
(temp file + fsync + ``os.replace``), so many processes on one machine share one ledger and
lose no update (``_files.LockedStateFile``). Its blocking I/O runs in a worker thread.
``state_from_document`` / ``document_with_state`` read and write the ledger part of the
document and pass stored credentials through untouched; ``open_auth_profile_store`` opens a
config's store.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final, Protocol

import anyio
import anyio.abc
import orjson

from .._files import DamagedStateFile, LockedStateFile
from ..backends.auth import UpdateFn
from ..redaction import package_logger
from .operations import AuthProfileStoreError
from .profiles import AuthProfile
from .state import AuthProfileStoreState, usage_stats_from_json, usage_stats_to_json
from .store import (
    AuthProfileStoreBase,
    check_profiles_unchanged,
    merge_configured_profiles,
    profiles_by_id,
)

__all__ = [
    "AUTH_PROFILES_FILENAME",
    "AuthStoreConfig",
    "JsonFileAuthProfileStore",
    "document_with_state",
    "open_auth_profile_store",
    "state_from_document",
]

logger = package_logger(logging.getLogger("openclaw_runtime.auth"))

AUTH_PROFILES_FILENAME: Final = "auth-profiles.json"


class _ConfiguredProfiles(Protocol):
    @property
    def profiles(self) -> Iterable[AuthProfile]: ...


class AuthStoreConfig(Protocol):
    """What ``open_auth_profile_store`` reads of a config (``RuntimeConfig`` has it)."""

    @property
    def auth(self) -> _ConfiguredProfiles: ...

    def auth_store_path(self) -> Path: ...


# --- the JSON file ----------------------------------------------------------------------------


def state_from_document(
    document: Mapping[str, Any], configured: Mapping[str, AuthProfile] | None = None
) -> AuthProfileStoreState:
    """Parse an ``auth-profiles.json`` object; configured profiles win over stored ones.

    A stored profile that cannot be parsed is skipped with a warning naming its id and the
    problem (never its secret).
    """
    profiles: dict[str, AuthProfile] = {}
    raw_profiles = document.get("profiles")
    if isinstance(raw_profiles, Mapping):
        for profile_id, raw in raw_profiles.items():
            try:
                profiles[str(profile_id)] = AuthProfile.from_openclaw(str(profile_id), raw)
            except ValueError as exc:
                logger.warning("skipping stored auth profile: %s", exc)
    profiles = merge_configured_profiles(profiles, configured or {})
    order: dict[str, tuple[str, ...]] = {}
    raw_order = document.get("order")
    if isinstance(raw_order, Mapping):
        for provider, ids in raw_order.items():
            if isinstance(ids, list):
                order[str(provider)] = tuple(i for i in ids if isinstance(i, str))
    raw_last_good = document.get("lastGood")
    last_good = (
        {str(k): v for k, v in raw_last_good.items() if isinstance(v, str)}
        if isinstance(raw_last_good, Mapping)
        else {}
    )
    version = document.get("version")
    return AuthProfileStoreState(
        version=version if isinstance(version, int) and not isinstance(version, bool) else 1,
        profiles=profiles,
        order=order,
        last_good=last_good,
        usage_stats=usage_stats_from_json(document.get("usageStats")),
    )


def document_with_state(
    document: Mapping[str, Any], state: AuthProfileStoreState
) -> dict[str, Any]:
    """``document`` with the ledger of ``state`` written in; everything else kept as is.

    Stored profiles (and their secrets) are passed through untouched: this runtime never
    re-serializes a credential.
    """
    out = dict(document)
    out.setdefault("version", state.version)
    for key, value in (
        ("order", {k: list(v) for k, v in state.order.items()}),
        ("lastGood", dict(state.last_good)),
        ("usageStats", usage_stats_to_json(state.usage_stats)),
    ):
        if value:
            out[key] = value
        else:
            out.pop(key, None)
    return out


class JsonFileAuthProfileStore(AuthProfileStoreBase):
    """OpenClaw's ``auth-profiles.json``, safe for many processes on one machine.

    Reads need no lock (the file is only ever replaced whole); updates hold
    ``<file>.lock`` while they read, apply and write. Profiles from config (``profiles``) are
    merged into every snapshot but never written to the file. A file that cannot be parsed
    is set aside as ``<file>.corrupt-<time>-<pid>`` with a warning and the ledger starts
    empty (``_files.load_or_set_aside``): a damaged ledger never stops a run.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        profiles: Iterable[AuthProfile] = (),
        lock_timeout: float = 30.0,
    ) -> None:
        self._file = LockedStateFile(
            path,
            what="auth profile store",
            tag="auth",
            lock_timeout=lock_timeout,
            logger=logger,
            error=AuthProfileStoreError,
        )
        self.path = self._file.path
        self.lock_path = self._file.lock_path
        self.lock_timeout = lock_timeout
        self._loaded: tuple[tuple[int, int, int], AuthProfileStoreState] | None = None
        self._configured = profiles_by_id(profiles)

    def __repr__(self) -> str:
        return f"JsonFileAuthProfileStore({str(self.path)!r})"

    # synchronous core (runs in a worker thread) ---------------------------------------------

    @staticmethod
    def _parse_document(data: bytes) -> dict[str, Any]:
        if not data.strip():
            return {}
        try:
            document = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            # no excerpt of the bytes: the file holds credentials
            raise DamagedStateFile(
                f"not valid JSON at line {exc.lineno}, column {exc.colno}"
            ) from None
        if not isinstance(document, dict):
            raise DamagedStateFile("not a JSON object")
        return document

    def _read_document(self, *, locked: bool = False) -> dict[str, Any]:
        """The stored document; a damaged file is set aside (warning) and reads as empty."""
        empty: dict[str, Any] = {}
        return self._file.read(self._parse_document, empty.copy, locked=locked)

    def load_sync(self) -> AuthProfileStoreState:
        """Blocking ``load``."""
        return state_from_document(self._read_document(), self._configured)

    def update_sync(self, fn: UpdateFn) -> AuthProfileStoreState:
        """Blocking ``update``: lock, read, apply ``fn``, write atomically, unlock."""
        with self._file.locked():
            document = self._read_document(locked=True)
            before = state_from_document(document, self._configured)
            after = fn(before)
            if after is None or after is before:
                return before
            check_profiles_unchanged(before, after)
            payload = orjson.dumps(document_with_state(document, after), option=orjson.OPT_INDENT_2)
            self._file.write(payload + b"\n")
            return after

    # async API ---------------------------------------------------------------------------------

    async def load(self) -> AuthProfileStoreState:
        # the file is only ever replaced whole, so (inode, size, mtime) identifies a version:
        # an unchanged file is not read again (every run loads the ledger at least once)
        try:
            stat = os.stat(self.path)
            marker: tuple[int, int, int] | None = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        except FileNotFoundError:
            marker = (0, 0, 0)
        except OSError:
            marker = None
        cached = self._loaded
        if marker is not None and cached is not None and cached[0] == marker:
            return cached[1]
        state = await anyio.to_thread.run_sync(self.load_sync)
        if marker is not None:
            self._loaded = (marker, state)
        return state

    async def update(self, fn: UpdateFn) -> AuthProfileStoreState:
        return await anyio.to_thread.run_sync(self.update_sync, fn)


def open_auth_profile_store(
    config: AuthStoreConfig, *, path: str | os.PathLike[str] | None = None
) -> JsonFileAuthProfileStore:
    """The embedded default store of ``config``: ``auth.store_path`` (or
    ``<state_dir>/auth-profiles.json``) with the configured profiles merged in."""
    return JsonFileAuthProfileStore(
        path if path is not None else config.auth_store_path(), profiles=config.auth.profiles
    )
