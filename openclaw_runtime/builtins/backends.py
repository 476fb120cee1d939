"""Built-in plugin ``builtin.backends``: the embedded default of every backend kind.

Registered under the name ``embedded`` (``EMBEDDED_BACKEND``), so a config can name the
default explicitly (``[backends] lanes = "embedded"``) and ``openclaw-runtime plugins`` lists
it beside plugin backends. A kind left unset in ``[backends]`` uses the same factories. The
in-memory backends (``memory.MEMORY_FACTORIES``) are registered here too, as ``memory``.
Each factory imports its backend's module when it first builds one (start-up time).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from .._markers import hookimpl
from .._types import RegisterBackend
from ..backends.kinds import EMBEDDED_BACKEND, MEMORY_BACKEND
from ..redaction import package_logger
from .memory import MEMORY_FACTORIES

__all__ = ["EMBEDDED_FACTORIES", "register_backends"]


def _lanes(runtime: Any) -> Any:
    """``FileLanes`` in ``<state_dir>/lanes``: session lanes hold across the processes on one
    state dir; the global cap is per process unless ``[agent] global_cap_scope = "machine"``."""
    from ..runner.file_lanes import FileLanes  # lazy: start-up time

    return FileLanes(
        runtime.config.state_dir.expanduser() / "lanes",
        global_cap_scope=runtime.config.agent.global_cap_scope,
    )


def _auth_store(runtime: Any) -> Any:
    """The locked JSON ledger (``auth.store_path`` or ``<state_dir>/auth-profiles.json``)."""
    from ..auth.json_file import open_auth_profile_store  # lazy: start-up time

    return open_auth_profile_store(runtime.config)


def _steering_store(runtime: Any) -> Any:
    """``<state_dir>/subagents/runs.json`` under a file lock."""
    from ..runner.steering_store import JsonFileSteeringStore  # lazy: start-up time

    return JsonFileSteeringStore(runtime.config.state_dir.expanduser() / "subagents" / "runs.json")


def _session_index(runtime: Any) -> Any:
    """``<state_dir>/sessions/index.json`` under a file lock."""
    from ..runner.session_index import JsonFileSessionIndex  # lazy: start-up time

    return JsonFileSessionIndex(runtime.sessions_dir / "index.json")


def _session_store(runtime: Any) -> Any:
    """One JSONL file per session in ``<state_dir>/sessions``.

    Appends are buffered and flushed at every turn end, so a crash loses at most the turn in
    flight and a turn costs one locked write instead of one per message.
    """
    from ..transcript.store import JsonlSessionStore  # lazy: start-up time

    return JsonlSessionStore(
        runtime.sessions_dir,
        durability="none",
        # repairs (lines or a header kept aside) show up as one warning line
        warn=package_logger(logging.getLogger("openclaw_runtime.transcript")).warning,
    )


#: kind → factory(runtime) of the embedded default.
EMBEDDED_FACTORIES: dict[str, Callable[[Any], Any]] = {
    "lanes": _lanes,
    "auth_store": _auth_store,
    "steering_store": _steering_store,
    "session_index": _session_index,
    "session_store": _session_store,
}


@hookimpl(trylast=True)
def register_backends(register: RegisterBackend) -> None:
    """Every kind's embedded default, named ``embedded``, and its in-memory one, ``memory``."""
    for kind, factory in EMBEDDED_FACTORIES.items():
        register(kind, EMBEDDED_BACKEND, factory)
    for kind, factory in MEMORY_FACTORIES.items():
        register(kind, MEMORY_BACKEND, factory)
