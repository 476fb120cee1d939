"""The five backend seams the runner reaches shared state through.

* ``lanes``: ``LaneBackend`` (default ``runner.file_lanes.FileLanes``);
* ``auth_store``: ``AuthStore`` (default ``auth.json_file.JsonFileAuthProfileStore``);
* ``steering_store``: ``SteeringStore`` (default ``runner.steering_store.JsonFileSteeringStore``);
* ``session_index``: ``SessionIndex`` (default ``runner.session_index.JsonFileSessionIndex``);
* ``session_store``: ``SessionStore`` (default ``transcript.store.JsonlSessionStore``).

Each protocol's docstring states the guarantees every backend gives; a plugin contributes a
backend through ``register_backends(register)`` with ``register(kind, name, factory)``, and
``openclaw_runtime.testing`` has one contract suite per protocol (``LaneBackendContract``...)
that built-in and plugin backends alike pass. This package sits beside the policy packages: it
imports neither the runner nor the ``Runtime`` (see docs/backends.md).
"""

import typing as _typing

from .._lazy_face import lazy_getattr as _lazy_getattr

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from .auth import AuthStore, UpdateFn  # noqa: I001 (packed: a face has at most 100 lines)
    from .kinds import BACKEND_KINDS, EMBEDDED_BACKEND, MEMORY_BACKEND
    from .lanes import (
        PRIORITY_RANK, HeldLane, LaneBackend, LaneLease, LaneReentryError, LaneTimeoutError,
        Priority, held_lanes, holding, is_session_lane,
    )
    from .sessions import Session, SessionIndex, SessionIndexEntry, SessionStore
    from .steering import (
        LiveInbox, LiveInboxLease, SteeringLease, SteeringStore, SteeringStoreError,
        SubagentRunRecord,
    )
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "auth": "AuthStore UpdateFn",
    "kinds": "BACKEND_KINDS EMBEDDED_BACKEND MEMORY_BACKEND",
    "lanes": (
        "PRIORITY_RANK HeldLane LaneBackend LaneLease LaneReentryError LaneTimeoutError Priority "
        "held_lanes holding is_session_lane"
    ),
    "sessions": "Session SessionIndex SessionIndexEntry SessionStore",
    "steering": (
        "LiveInbox LiveInboxLease SteeringLease SteeringStore SteeringStoreError SubagentRunRecord"
    ),
}
__getattr__ = _lazy_getattr(__name__, _LAZY)


__all__ = [
    "BACKEND_KINDS", "EMBEDDED_BACKEND", "MEMORY_BACKEND", "PRIORITY_RANK", "AuthStore",
    "HeldLane", "LaneBackend", "LaneLease", "LaneReentryError", "LaneTimeoutError", "LiveInbox",
    "LiveInboxLease", "Priority",
    "Session", "SessionIndex", "SessionIndexEntry", "SessionStore", "SteeringLease",
    "SteeringStore", "SteeringStoreError", "SubagentRunRecord", "UpdateFn", "held_lanes", "holding",
    "is_session_lane",
]  # fmt: skip
