"""Built-in plugin ``builtin.transcript``: transcript sanitizers and the generic replay validator."""

from __future__ import annotations
