"""``Runtime``'s live-run verbs: reach a running turn by its session (seed 000 §3.1–3.2).

The twins of OpenClaw's ``queueEmbeddedPiMessage`` (``steer``), ``abortEmbeddedPiRun``
(``abort_run``), ``isEmbeddedPiRunActive``, ``isEmbeddedPiRunStreaming`` and
``waitForEmbeddedPiRunEnd``, plus ``follow_up`` (the kernel's follow-up queue, which
OpenClaw's runner does not export). Each addresses a run by ``session_key`` or
``session_id``. The registry and its decisions are ``runner.live``; this mixin only resolves
the address and picks the local run or, for ``steer`` and ``follow_up``, the session's inbox
in the steering store (a run of another process on the same state dir).

What ``steer`` does in each case (documented in docs/runs.md):

* a run of this process takes it: ``queued`` — it is injected at the run's next turn
  boundary (after the tools of the current turn finish, before the next model call);
* no run here, but another process's run owns the session's inbox: ``queued_remote`` — that
  run reads it at its next turn boundary;
* no run anywhere: refused, ``no_active_run`` (as OpenClaw returns false); nothing is stored,
  so the caller decides whether the text becomes the next run's prompt;
* the run is compacting: refused, ``compacting`` (as OpenClaw); ``stopped``: the run made its
  last drain and is ending.
"""

from __future__ import annotations

from typing import Any

from .abort import AbortError
from .runner.live import LiveMessageKind, LiveMessageResult, LiveRunHandle, validate_live_text
from .runner.live_run import live_inbox_of
from .runner.services import RunServices

__all__ = ["LiveRunVerbs"]


class LiveRunVerbs:
    """The live-run verbs ``Runtime`` inherits (it provides ``services``)."""

    services: RunServices

    # addressing ---------------------------------------------------------------------------------

    def _local_session_id(self, session_key: str | None, session_id: str | None) -> str | None:
        if session_id is None and session_key is None:
            raise ValueError("address the run with session_key=... or session_id=...")
        for name, value in (("session_key", session_key), ("session_id", session_id)):
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ValueError(f"{name} must be a non-empty str, got {value!r}")
        if session_id is not None:
            return session_id.strip()
        assert session_key is not None
        return self.services.live_runs.session_id_for(session_key.strip())

    async def _session_id(self, session_key: str | None, session_id: str | None) -> str | None:
        found = self._local_session_id(session_key, session_id)
        if found is None and session_key is not None:
            found = await self.services.session_index.lookup_id(session_key.strip())
        return found

    def _handle(self, session_key: str | None, session_id: str | None) -> LiveRunHandle | None:
        return self.services.live_runs.get(self._local_session_id(session_key, session_id))

    async def _offer(
        self,
        kind: LiveMessageKind,
        text: str,
        session_key: str | None,
        session_id: str | None,
    ) -> LiveMessageResult:
        text = validate_live_text(text)
        sid = await self._session_id(session_key, session_id)
        handle = self.services.live_runs.get(sid)
        if handle is not None:
            reason = handle.offer(kind, text)
            return LiveMessageResult(reason == "queued", reason, handle.session_id)
        inbox = live_inbox_of(self.services.steering_store) if sid is not None else None
        if inbox is not None and sid is not None and await inbox.push(sid, kind, text):
            return LiveMessageResult(True, "queued_remote", sid)
        return LiveMessageResult(False, "no_active_run", sid)

    # the verbs ----------------------------------------------------------------------------------

    async def steer(
        self, text: str, *, session_key: str | None = None, session_id: str | None = None
    ) -> LiveMessageResult:
        """Inject ``text`` into the running turn of a session at its next turn boundary.

        Returns a ``LiveMessageResult`` (true when a run took it; ``reason`` says
        ``queued``, ``queued_remote``, ``no_active_run``, ``compacting`` or ``stopped``). A
        refused message is not kept: send it as the next run's prompt if it still matters.
        Raises ``ValueError`` / ``TypeError`` for a blank text or a missing address.
        """
        return await self._offer("steer", text, session_key, session_id)

    async def follow_up(
        self, text: str, *, session_key: str | None = None, session_id: str | None = None
    ) -> LiveMessageResult:
        """Queue ``text`` for when the running turn would end: the run continues with it
        (the kernel's outer loop) instead of ending. Same result and refusals as ``steer``,
        except that a compacting run takes it."""
        return await self._offer("follow_up", text, session_key, session_id)

    async def abort_run(
        self,
        *,
        session_key: str | None = None,
        session_id: str | None = None,
        reason: str | None = None,
    ) -> bool:
        """Abort the running turn of a session in this process: it ends with an ``aborted``
        outcome and what it had streamed is kept in the transcript as an aborted assistant
        message. False when no run of this process is active there."""
        handle = self._handle(session_key, session_id)
        if handle is None:
            return False
        handle.abort(AbortError(reason or "the run was aborted (abort_run)"))
        return True

    def is_run_active(
        self, *, session_key: str | None = None, session_id: str | None = None
    ) -> bool:
        """A run of this process holds the session now."""
        return self._handle(session_key, session_id) is not None

    def is_run_streaming(
        self, *, session_key: str | None = None, session_id: str | None = None
    ) -> bool:
        """The session's run is inside an attempt (talking to the model or running its
        tools), not waiting between attempts or compacting; False when there is no run."""
        handle = self._handle(session_key, session_id)
        return handle is not None and handle.streaming and not handle.compacting

    async def wait_for_run_end(
        self,
        *,
        session_key: str | None = None,
        session_id: str | None = None,
        timeout_s: float = 15.0,
    ) -> bool:
        """True once the session's run ended (at once when none is active); False when it
        is still running after ``timeout_s`` (at least 0.1 s, as in OpenClaw)."""
        sid = self._local_session_id(session_key, session_id)
        return await self.services.live_runs.wait_for_end(sid, timeout_s)

    def active_runs(self) -> list[dict[str, Any]]:
        """The live runs of this process: session id and key, run id, what they are doing."""
        runs = []
        for sid in self.services.live_runs.active_session_ids():
            handle = self.services.live_runs.get(sid)
            if handle is not None:
                runs.append(
                    {
                        "sessionId": handle.session_id,
                        "sessionKey": handle.session_key,
                        "runId": handle.run_id,
                        "streaming": handle.streaming,
                        "compacting": handle.compacting,
                        "pending": handle.pending(),
                    }
                )
        return runs
