"""Acking the steering lease after a successful turn, with a bounded retry.

A run that injected sub-agent results into its prompt acks their lease once the turn
succeeded, so the items become ``delivered``. If that ack fails (the store blipped), the
items stay ``in_progress`` until the lease goes stale (``STALE_STEERING_LEASE_MS``, five
minutes) and are then delivered **again** to a later turn: the answer already used them. A
transient failure should not cost a duplicate, so the ack is tried
``STEERING_ACK_ATTEMPTS`` times with a short backoff (an ack is idempotent: it only touches
items still leased under its own lease id, and returns 0 for the rest).

When every try fails the run still keeps its answer (``merge_run_cleanup_outcome``) and the
failure is reported; the items are then redelivered after the lease expires: delivery is
at-least-once, never lost. A plugin store's failure that persists through every try is one
fault of that plugin.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

import anyio

from ..backends import SteeringStore
from ..containment.proxy import GuardedBackend
from ..failover.events import redact_secret_text
from ..redaction import package_logger
from .steering import SteeringLease, ack_leased_agent_steering_items

__all__ = [
    "STEERING_ACK_ATTEMPTS",
    "STEERING_ACK_RETRY_DELAYS_S",
    "ack_steering_lease_with_retry",
    "steering_ack_retry_delay_s",
]

logger = package_logger(logging.getLogger("openclaw_runtime.runner"))

#: Delays before the second and third try (seconds, before scaling).
STEERING_ACK_RETRY_DELAYS_S: Final = (0.05, 0.25)
#: Tries in all.
STEERING_ACK_ATTEMPTS: Final = len(STEERING_ACK_RETRY_DELAYS_S) + 1


def steering_ack_retry_delay_s(failures: int, *, scale: float = 1.0) -> float | None:
    """The delay before the next try after ``failures`` failed tries; None: give up."""
    if failures < 1 or failures > len(STEERING_ACK_RETRY_DELAYS_S):
        return None
    return STEERING_ACK_RETRY_DELAYS_S[failures - 1] * max(0.0, scale)


async def ack_steering_lease_with_retry(
    store: SteeringStore,
    lease: SteeringLease,
    *,
    now_ms: Callable[[], float],
    scale: float = 1.0,
) -> int:
    """Ack ``lease``; retry a failing ack (module docstring), re-raising the last error.

    The early tries of a plugin's store go to the store itself (a failure is logged); the
    last one goes through its guard, so a failure that persists is one fault of the plugin,
    and the retries alone never trip its breaker."""
    raw = store.wrapped if isinstance(store, GuardedBackend) else store
    failures = 0
    while True:
        target = store if failures + 1 >= STEERING_ACK_ATTEMPTS else raw
        try:
            return await ack_leased_agent_steering_items(target, lease, now_ms=now_ms())
        except Exception as exc:
            failures += 1
            delay = steering_ack_retry_delay_s(failures, scale=scale)
            if delay is None:
                raise
            logger.warning(
                "steering ack failed (try %d of %d), retrying: %s",
                failures,
                STEERING_ACK_ATTEMPTS,
                redact_secret_text(str(exc)),
            )
            await anyio.sleep(delay)
