"""Redis backends for openclaw-runtime: many workers, many machines, one view of each session.

Select them under ``[backends]`` (``lanes = "redis"`` ... ) and point them at Redis with
``OPENCLAW_RUNTIME_REDIS_URL``; see ``docs/scale-out.md``.
"""

from __future__ import annotations

from ._conn import DEFAULT_PREFIX, REDIS_URL_ENV, RedisConnection, RedisSettings
from .lanes import (
    DEFAULT_LEASE_MS,
    Fence,
    LaneLeaseLostError,
    RedisLanes,
    StaleFencingTokenError,
    current_fences,
)

__all__ = [
    "DEFAULT_LEASE_MS",
    "DEFAULT_PREFIX",
    "REDIS_URL_ENV",
    "Fence",
    "LaneLeaseLostError",
    "RedisConnection",
    "RedisLanes",
    "RedisSettings",
    "StaleFencingTokenError",
    "current_fences",
]
