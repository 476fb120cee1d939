"""The auth-profile ledger on Redis: one cooldown/disable view for every worker.

The ledger (``order``, ``lastGood``, ``usageStats``) is one JSON document at
``<prefix>auth:ledger``, in the same shape as the file store's ``auth-profiles.json``.
``update(fn)`` runs the core's pure update function (``mark_auth_profile_failure`` and friends
build it from ``auth/cooldown.py``: 30 s → 1 min → 5 min, billing/auth_permanent disable
backoff, non-extendable active windows, model-scope widening, ``clearExpiredCooldowns``)
as a compare-and-set (``_atomic.cas_update``: the write lands only if the document is still
the one read, else the update runs again), so concurrent failures on two machines both count.

Credentials never go to Redis: profiles come from each worker's config (as in OpenClaw,
where ``auth.profiles`` holds metadata and secrets come from the environment), and only the
health ledger is shared.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Final

import orjson

from openclaw_runtime.auth.json_file import document_with_state, state_from_document
from openclaw_runtime.auth.operations import AuthProfileStoreError
from openclaw_runtime.auth.profiles import AuthProfile
from openclaw_runtime.auth.state import AuthProfileStoreState
from openclaw_runtime.auth.store import AuthProfileStoreBase, merge_configured_profiles
from openclaw_runtime.backends.auth import UpdateFn
from openclaw_runtime.redaction import package_logger

from ._atomic import cas_update
from ._conn import RedisConnection

__all__ = ["RedisAuthProfileStore"]

logger = package_logger(logging.getLogger("openclaw_runtime_redis.ledger"))

# KEYS: ledger ; ARGV: had_value (0/1), old value, new value
CAS: Final = """
local current = redis.call('GET', KEYS[1])
if ARGV[1] == '1' then
  if current ~= ARGV[2] then return 0 end
elseif current then
  return 0
end
redis.call('SET', KEYS[1], ARGV[3])
return 1
"""


def _parse(raw: bytes | str | None) -> dict[str, Any]:
    if not raw:
        return {}
    try:
        document = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise AuthProfileStoreError(
            f"the Redis auth ledger is not valid JSON (line {exc.lineno}, column {exc.colno}); "
            "delete the key or fix it"
        ) from None
    if not isinstance(document, dict):
        raise AuthProfileStoreError("the Redis auth ledger is not a JSON object")
    document.pop("profiles", None)  # never trust (or re-share) credentials from Redis
    return document


class RedisAuthProfileStore(AuthProfileStoreBase):
    """``AuthProfileStore`` on Redis: atomic ``update`` via ``WATCH``/``MULTI`` retry."""

    def __init__(self, conn: RedisConnection, *, profiles: Iterable[AuthProfile] = ()) -> None:
        self.conn = conn
        self.key = conn.key("auth", "ledger")
        configured: dict[str, AuthProfile] = {}
        for profile in profiles:
            configured[profile.id] = profile
        self._configured: Mapping[str, AuthProfile] = configured
        self._cas = conn.script(CAS)

    def __repr__(self) -> str:
        return f"RedisAuthProfileStore(key={self.key!r})"

    def _state(self, document: Mapping[str, Any]) -> AuthProfileStoreState:
        state = state_from_document(document, None)
        return state.replace(profiles=merge_configured_profiles({}, dict(self._configured)))

    async def load(self) -> AuthProfileStoreState:
        return self._state(_parse(await self.conn.client.get(self.key)))

    async def update(self, fn: UpdateFn) -> AuthProfileStoreState:
        async def read() -> tuple[bytes | None, dict[str, Any]]:
            raw = await self.conn.client.get(self.key)
            return (raw.encode() if isinstance(raw, str) else raw), _parse(raw)

        def apply(document: dict[str, Any]) -> tuple[AuthProfileStoreState, bytes | None]:
            before = self._state(document)
            after = fn(before)
            if after is None or after is before:
                return before, None
            if dict(after.profiles) != dict(before.profiles):
                raise AuthProfileStoreError("an auth ledger update may not change profiles")
            return after, orjson.dumps(document_with_state(document, after))

        async def commit(old: bytes | None, new: bytes) -> bool:
            args = ["1", old, new] if old is not None else ["0", "", new]
            return bool(await self._cas(keys=[self.key], args=args))

        try:
            return await cas_update(read, apply, commit, what="auth ledger")
        except RuntimeError as exc:
            raise AuthProfileStoreError(str(exc)) from None
