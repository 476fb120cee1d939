"""A message that waits when the run would end wins over finalization (issue 15 §1, §6).

OpenClaw: "a queued user message wins over finalization" (the hook is skipped while the
run's queues hold a message). The kernel's last drain (``drain_follow_ups``) already takes
what was queued in this process; what can still be waiting when the attempt ends is a steer
or follow-up another process put into the run's inbox after that drain (``queued_remote``:
the caller was told the run will read it). Before the answer is accepted (and before
``before_agent_finalize`` is asked about it) the run reads its queues once more, steers first;
when a message waits (``finalize_step`` says ``steer``), the message
is appended to the transcript as a delivered live message (with the ``message_start`` /
``message_end`` events an injected steer has) and the run takes one more attempt,
which continues from it (``attempt_input``: a retry after a delivered steer continues). The
hook is then asked about the answer to the steer, not about the superseded one.
"""

from __future__ import annotations

import logging
from typing import Any, Final, Protocol

from ..events import Event, MessageEnd, MessageStart
from ..redaction import package_logger
from .checkin import CheckinRun, flush_session
from .finalize import finalize_step
from .live import LiveRunHandle

__all__ = ["STEERED_BEFORE_FINALIZE", "SteerableRun", "steer_before_finalize"]

logger = package_logger(logging.getLogger("openclaw_runtime.runner"))

#: ``RetryScheduled.kind`` of the extra attempt a waiting steer starts.
STEERED_BEFORE_FINALIZE: Final = "steered_before_finalize"


class SteerableRun(CheckinRun, Protocol):
    """What ``steer_before_finalize`` uses of the run (``RunState`` is one; its flush's
    failure is the run's error: ``CheckinRun``)."""

    live: LiveRunHandle | None
    session: Any
    live_entry_ids: set[str]
    run_entry_ids: set[str]
    run_id: str

    async def emit(self, event: Event) -> None: ...


async def steer_before_finalize(
    run: SteerableRun, *, revisions_so_far: int, payload_count: int
) -> int:
    """Deliver the message(s) waiting now; how many (0: go on and finalize)."""
    live = run.live
    if live is None or run.session is None:
        return 0
    # the inbox of other processes first, then a steer, else a follow-up (the queue modes hold)
    messages = await live.drain_follow_ups()
    step = finalize_step(
        message_queued=bool(messages),
        revisions_so_far=revisions_so_far,
        payload_count=payload_count,
    )
    if step != "steer":
        return 0
    for message in messages:
        entry_id = await run.session.append_message(message)
        run.live_entry_ids.add(entry_id)  # a retry continues from it
        run.run_entry_ids.add(entry_id)  # it is one of this run's messages
        # observers see it as they see a steer the kernel injects
        await run.emit(MessageStart(message))
        await run.emit(MessageEnd(message))
    await flush_session(run, run.session, "queued-message")
    logger.info(
        "a live message waited when run %s would end: it goes on instead of finalizing",
        run.run_id,
    )
    return len(messages)
