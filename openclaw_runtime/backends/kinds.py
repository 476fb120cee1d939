"""The backend kinds, in the order ``[backends]`` selects them, and the embedded default's name.

Data only: the ``Runtime`` builds one component registry per kind and the runner's services
reject an unknown kind; both read these names from here (through the package face).
"""

from __future__ import annotations

__all__ = ["BACKEND_KINDS", "EMBEDDED_BACKEND", "MEMORY_BACKEND"]

#: The kinds ``[backends]`` selects and ``register_backends`` accepts, in that order.
BACKEND_KINDS: tuple[str, ...] = (
    "lanes",
    "auth_store",
    "steering_store",
    "session_index",
    "session_store",
)
#: The name the embedded default of every kind is registered under.
EMBEDDED_BACKEND = "embedded"
#: The name the in-memory backend of every kind is registered under (``[backends] default =
#: "memory"``: state lives in this process only, nothing is written under ``state_dir``).
MEMORY_BACKEND = "memory"
