"""The steering-store seam: where sub-agent results wait for their requester's next turn.

A sub-agent's result has to reach the session that spawned it, neither lost when the
requester's turn fails nor delivered twice. Delivery is a lease (OpenClaw's
``agent-steering-queue.ts``): ``lease`` takes the requester's pending results (and results whose
lease went stale), ``ack`` marks them delivered once the prompt was injected, ``release`` hands
them back when the turn failed first. This module holds the protocol and the records it speaks
(OpenClaw's ``SubagentRunRecord`` with camelCase on disk); the selection and prompt policy and
the embedded stores are in ``runner.steering``, which a backend imports to lease the same batch
every backend would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from .._exceptions import OpenClawRuntimeError

__all__ = [
    "DeliveryStatus",
    "LiveInbox",
    "LiveInboxLease",
    "PendingFinalDeliveryPayload",
    "Runs",
    "SteeringLease",
    "SteeringStore",
    "SteeringStoreError",
    "SubagentCompletion",
    "SubagentCompletionDeliveryState",
    "SubagentRunOutcome",
    "SubagentRunRecord",
]

DeliveryStatus: TypeAlias = Literal[
    "pending", "in_progress", "delivered", "suspended", "discarded", "failed"
]


class SteeringStoreError(OpenClawRuntimeError):
    """The steering store could not be read, locked or written."""


# --------------------------------------------------------------------------- records


class _Record(BaseModel):
    """camelCase on disk (OpenClaw's field names), snake_case in Python, unknown keys kept."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
        validate_assignment=True,
    )

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict, absent values omitted."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class SubagentRunOutcome(_Record):
    """How the sub-agent run ended: ``ok``, ``error`` (with ``error``), ``timeout``..."""

    status: str
    error: str | None = None


class PendingFinalDeliveryPayload(_Record):
    """What the requester is to be told (frozen when the sub-agent finished)."""

    requester_session_key: str
    child_session_key: str
    child_run_id: str
    task: str = ""
    label: str | None = None
    requester_display_key: str | None = None
    ended_at: float | None = None
    outcome: SubagentRunOutcome | None = None


class SubagentCompletionDeliveryState(_Record):
    """The delivery obligation of one completed sub-agent run."""

    status: DeliveryStatus = "pending"
    created_at: float | None = None
    payload: PendingFinalDeliveryPayload | None = None
    attempt_count: int = 0
    last_error: str | None = None
    last_drop_reason: str | None = None
    steering_lease_id: str | None = None
    steering_leased_at: float | None = None
    steering_injected_at: float | None = None
    announced_at: float | None = None
    delivered_at: float | None = None
    suspended_at: float | None = None
    suspended_reason: str | None = None


class SubagentCompletion(_Record):
    """The captured result: ``result_text`` and the text captured before a ``NO_REPLY``."""

    result_text: str | None = None
    fallback_result_text: str | None = None


class SubagentRunRecord(_Record):
    """One sub-agent run as the requester's registry sees it (OpenClaw's ``SubagentRunRecord``).

    ``cleanup_handled`` is set while a lease (or the cleanup path) owns the run;
    ``cleanup_completed_at`` marks a finalized run whose ``cleanup_handled`` release and ack
    leave alone.
    """

    run_id: str
    child_session_key: str
    requester_session_key: str
    task: str = ""
    label: str | None = None
    created_at: float = 0
    ended_at: float | None = None
    outcome: SubagentRunOutcome | None = None
    completion: SubagentCompletion | None = None
    cleanup_handled: bool = False
    cleanup_completed_at: float | None = None
    delivery: SubagentCompletionDeliveryState | None = None

    @classmethod
    def completed(
        cls,
        *,
        run_id: str,
        requester_session_key: str,
        child_session_key: str | None = None,
        task: str = "",
        label: str | None = None,
        result_text: str | None = None,
        fallback_result_text: str | None = None,
        status: str = "ok",
        error: str | None = None,
        created_at: float = 0,
        ended_at: float | None = None,
    ) -> SubagentRunRecord:
        """A finished run with a pending delivery to ``requester_session_key``."""
        child = child_session_key or f"agent:main:subagent:{run_id}"
        outcome = SubagentRunOutcome(status=status, error=error)
        return cls(
            run_id=run_id,
            child_session_key=child,
            requester_session_key=requester_session_key,
            task=task,
            label=label,
            created_at=created_at,
            ended_at=ended_at,
            outcome=outcome,
            completion=SubagentCompletion(
                result_text=result_text, fallback_result_text=fallback_result_text
            ),
            delivery=SubagentCompletionDeliveryState(
                status="pending",
                created_at=ended_at,
                payload=PendingFinalDeliveryPayload(
                    requester_session_key=requester_session_key,
                    child_session_key=child,
                    child_run_id=run_id,
                    task=task,
                    label=label,
                    ended_at=ended_at,
                    outcome=outcome,
                ),
            ),
        )


Runs: TypeAlias = dict[str, SubagentRunRecord]


@dataclass(frozen=True, slots=True)
class SteeringLease:
    """A lease on a batch of sub-agent results: ack it after injecting ``prompt``, release it
    when the turn fails first."""

    lease_id: str
    prompt: str
    run_ids: tuple[str, ...]
    items: tuple[SubagentRunRecord, ...]


# --------------------------------------------------------------------------- protocol


@runtime_checkable
class SteeringStore(Protocol):
    """A backend of the steering queue (``[backends] steering_store``).

    Guarantees (``SteeringStoreContract`` checks them):

    * every operation is atomic against every other one on the same store, in this process
      and in any other process sharing it;
    * ``lease`` hands an item to at most one lease at a time: two concurrent leases for one
      requester never share an item, and an item leased, then neither acked nor released for
      more than ``STALE_STEERING_LEASE_MS`` (5 min), is leased again (stale-lease reclaim);
    * ``ack``/``release`` touch only items still ``in_progress`` under *that* lease id and
      return how many they changed: a retired (reclaimed) lease's late ack or release changes
      nothing and returns 0, so an item is neither lost nor delivered twice;
    * a leased batch is selected and merged as ``runner.steering`` does (oldest first, the
      merged prompt bounded at ``MAX_MERGED_STEERING_CHARS`` with at least one item; the rest
      stay pending);
    * a store that cannot be read, locked or written raises ``SteeringStoreError``.
    """

    async def put(self, record: SubagentRunRecord) -> None:
        """Store (or replace) one run record (a sub-agent finished)."""
        ...

    async def load(self) -> Runs:
        """A snapshot of every record (a copy: changing it changes nothing)."""
        ...

    async def lease(
        self, requester_session_key: str, *, now_ms: float, lease_id: str | None = None
    ) -> SteeringLease | None:
        """Lease the next bounded batch for the requester's turn (a fresh lease id unless
        ``lease_id`` is given); None when nothing waits."""
        ...

    async def ack(self, lease: SteeringLease, *, now_ms: float) -> int:
        """The lease's prompt reached the requester: mark its items delivered (payload
        dropped); returns how many were still owned by this lease."""
        ...

    async def release(self, lease: SteeringLease, *, error: str | None = None) -> int:
        """The requester's turn failed before injection: hand the items back (``pending``, or
        ``suspended`` for a suspended delivery; attempt count kept, ``error`` recorded);
        returns how many were still owned by this lease."""
        ...


@runtime_checkable
class LiveInbox(Protocol):
    """Optional: a steering store with a ``live_inbox`` of this shape carries ``steer`` and
    ``follow_up`` messages to a run of another process (``runner.live_inbox``). The run's
    process ``open``s the session's inbox and ``close``s it when the run ends; ``push``
    appends only while a live owner holds it (False otherwise); ``take`` empties it."""

    async def open(self, session_id: str, run_id: str) -> None: ...

    async def take(self, session_id: str) -> list[tuple[Literal["steer", "follow_up"], str]]: ...

    async def close(
        self, session_id: str, run_id: str
    ) -> list[tuple[Literal["steer", "follow_up"], str]]: ...

    async def push(
        self, session_id: str, kind: Literal["steer", "follow_up"], text: str
    ) -> bool: ...

    async def owned(self, session_id: str) -> bool: ...


@runtime_checkable
class LiveInboxLease(Protocol):
    """Optional, for a ``LiveInbox`` whose ownership is a lease with a TTL (no pid to check
    across machines): while the run is live, its process calls ``renew`` every
    ``renew_every_s`` seconds; False means another run owns the inbox now (stop renewing)."""

    renew_every_s: float

    async def renew(self, session_id: str, run_id: str) -> bool: ...
