"""``before_agent_reply`` for scheduled runs: a plugin may answer a cron turn itself.

OpenClaw's CLI entry (``runCliAgent``) asks the ``before_agent_reply`` hook before a run whose
trigger is ``cron``: a plugin that claims the turn (``handled``) returns the reply (or silence)
and the agent never starts, so a scheduled job a plugin can answer from its own state (a
digest, a "nothing new" check) costs no model call. The first claim wins. This twin runs at the
same place in ``Runtime.run``: after the ``before_agent_run`` veto, before the run takes its
lanes or touches the session; a claimed run ends ``ok`` with the plugin's reply as its only
payload (none when silent, stop reason ``hook_reply``) and records nothing in the transcript.

Only ``cron`` runs are offered (as in OpenClaw's CLI entry); the gateway's per-message use of
the same hook belongs to a channel layer this runtime does not have.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ReplyClaim", "normalize_reply_claim", "offers_before_agent_reply"]


@dataclass(frozen=True, slots=True)
class ReplyClaim:
    """A plugin's answer to a cron turn: ``text`` is the reply (``None``: stay silent)."""

    text: str | None = None
    reason: str | None = None
    handled: bool = True


def offers_before_agent_reply(trigger: str) -> bool:
    """Only scheduled runs are offered to ``before_agent_reply``."""
    return trigger == "cron"


def normalize_reply_claim(value: Any) -> ReplyClaim | None:
    """A hook's return as a claim, or ``None`` when it does not claim the turn: a
    ``ReplyClaim``, a bare reply string, or OpenClaw's mapping ``{"handled": True,
    "reply": {"text": ...}, "reason": ...}``."""
    if value is None:
        return None
    if isinstance(value, str):
        return ReplyClaim(value)
    if isinstance(value, ReplyClaim):
        return value if value.handled else None
    if isinstance(value, Mapping):
        if not value.get("handled"):
            return None
        reply = value.get("reply")
        text = reply.get("text") if isinstance(reply, Mapping) else reply
        reason = value.get("reason")
        return ReplyClaim(
            text if isinstance(text, str) and text.strip() else None,
            reason if isinstance(reason, str) else None,
        )
    raise TypeError(
        "before_agent_reply must return None, a ReplyClaim, a reply string or a mapping with "
        f"'handled', not {type(value).__name__}"
    )
