"""Built-in plugin ``builtin.context``: the ``legacy`` context engine."""

from __future__ import annotations
