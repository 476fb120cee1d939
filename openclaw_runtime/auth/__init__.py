"""Auth profiles: credentials, their health ledger (cooldowns, disables) and ordering."""

from __future__ import annotations
