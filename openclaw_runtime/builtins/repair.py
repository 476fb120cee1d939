"""Built-in plugin ``builtin.repair``: the plain-text tool-call repairer and its formats."""

from __future__ import annotations
