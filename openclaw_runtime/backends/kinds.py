"""The backend kinds, in the order ``[backends]`` selects them, and the embedded default's name.

Data only: the ``Runtime`` builds one component registry per kind and the runner's services
reject an unknown kind; both read these names from here (through the package face).
"""

from __future__ import annotations

__all__ = ["BACKEND_KINDS", "EMBEDDED_BACKEND"]

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
