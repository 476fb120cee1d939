"""How a connection that could not be made is worded, in a module that imports nothing.

``providers.errors`` writes these messages (it needs httpx to read transport exceptions);
the runner and the CLI only recognize them, and import this module instead so that a run of
a provider without HTTP, or the CLI's timeline, does not load httpx (start-up time).
"""

from __future__ import annotations

__all__ = ["NETWORK_ERROR_PREFIX", "is_network_error_message"]

NETWORK_ERROR_PREFIX = "Connection error: "


def is_network_error_message(text: str | None) -> bool:
    """The text of a connection that could not be made (refused, unresolved, unreachable), as
    opposed to one that timed out: users see ``network``, not ``timeout``."""
    return bool(text) and str(text).startswith(
        (f"{NETWORK_ERROR_PREFIX}cannot reach ", f"{NETWORK_ERROR_PREFIX}cannot resolve host ")
    )
