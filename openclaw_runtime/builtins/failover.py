"""Built-in plugin ``builtin.failover``: the generic failure classifier (``trylast``)."""

from __future__ import annotations
