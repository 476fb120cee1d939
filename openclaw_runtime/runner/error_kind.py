"""The ``kind`` a failed model call shows users (``RunResult.error.kind``, the CLI's error line).

The failover decision keeps OpenClaw's classification: a connection that could not be made
is ``Connection error: ...``, filed under ``timeout``, and may hand the run to the next model.
But nothing timed out, so users must not read "timeout": they see ``network`` and the URL that
could not be reached. ``timeout`` is reported only when something did time out.
"""

from __future__ import annotations

from ..providers.network_errors import is_network_error_message

__all__ = ["provider_error_kind", "user_facing_reason"]


def provider_error_kind(error_text: str | None, *, timed_out: bool) -> str:
    """``timeout`` when the attempt timed out, ``network`` when the provider could not be
    reached (refused, unresolved, unreachable), else ``provider``."""
    if timed_out:
        return "timeout"
    if is_network_error_message(error_text):
        return "network"
    return "provider"


def user_facing_reason(kind: str, reason: str | None) -> str | None:
    """The failover reason shown next to ``kind``: none for ``network`` (OpenClaw files it
    under ``timeout`` for the decision; the attempt events still carry that)."""
    return None if kind == "network" else reason
