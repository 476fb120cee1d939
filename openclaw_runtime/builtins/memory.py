"""The in-memory backend of every kind, registered by ``builtin.backends`` as ``"memory"``.

``[backends] default = "memory"`` (or ``Runtime(memory=True)``, ``openclaw-runtime run
--memory``) puts every kind left unset here: lanes, the auth ledger, the steering queue, the
session index and the transcripts live in this process, nothing is written under
``state_dir``, and everything is lost at exit. For stateless services, tests and benchmarks;
the durable default stays ``"embedded"`` (docs/backends.md says what is lost).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ..redaction import package_logger

__all__ = ["MEMORY_FACTORIES"]


def _lanes(runtime: Any) -> Any:
    """``InProcessLanes``: session and global lanes of this process only."""
    from ..runner.lanes import InProcessLanes  # lazy: start-up time

    return InProcessLanes()


def _auth_store(runtime: Any) -> Any:
    """The ledger in this process, over the configured profiles (``[auth] store_path`` is the
    embedded ledger's file and is not read)."""
    from ..auth.store import InMemoryAuthProfileStore  # lazy: start-up time

    return InMemoryAuthProfileStore(profiles=runtime.config.auth.profiles)


def _steering_store(runtime: Any) -> Any:
    """Sub-agent results queued in this process (no live-run inbox: a live run is reached
    through this runtime's ``steer``/``follow_up`` only)."""
    from ..runner.steering_store import InMemorySteeringStore  # lazy: start-up time

    return InMemorySteeringStore()


def _session_index(runtime: Any) -> Any:
    """Session key → id in this process."""
    from ..runner.memory_index import InMemorySessionIndex  # lazy: start-up time

    return InMemorySessionIndex()


def _session_store(runtime: Any) -> Any:
    """Transcripts in this process (OpenClaw's JSONL records, no file)."""
    from ..transcript.memory import MemorySessionStore  # lazy: start-up time

    return MemorySessionStore(
        warn=package_logger(logging.getLogger("openclaw_runtime.transcript")).warning
    )


#: kind → factory(runtime) of the in-memory backend.
MEMORY_FACTORIES: dict[str, Callable[[Any], Any]] = {
    "lanes": _lanes,
    "auth_store": _auth_store,
    "steering_store": _steering_store,
    "session_index": _session_index,
    "session_store": _session_store,
}
