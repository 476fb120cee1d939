"""Stream repair: tool calls written as plain text, found and promoted to structured calls."""

from __future__ import annotations
