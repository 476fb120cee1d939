"""The ``RunResult`` of a run, built in one place from how it ended.

A run ends in one of four ways: its model chain produced a candidate result (ok, error,
timeout, aborted), the failover chain raised (a hand-over with nothing left, an exhausted
chain, a provider error), a plugin's backend failed, or the ``before_agent_run`` gate blocked
it. A backend that fails only in the cleanup after the run reached its outcome (lane release,
steering ack, session check-in) goes through ``merge_run_cleanup_outcome``
(``after_backend_error``): a completed answer stands, the failure is reported as a fault.
Each becomes a ``RunResult`` through ``final_result``: the sticky terminal outcome
(``outcome``), the reply payloads (``payloads``), usage over every attempt, the run's messages
still on the branch, and, for any failed outcome, an error that says why (``run_error``).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from .._exceptions import FailoverExhaustedError, PluginBackendError
from ..failover import (
    ModelCandidate,
    classify_embedded_agent_run_result_for_model_fallback,
)
from ..failover.events import redact_secret_text
from ..llm import Model
from ..redaction import package_logger
from .candidate import CandidateResult, RunFailoverError
from .error_kind import provider_error_kind, user_facing_reason
from .exhaustion import candidate_result_view
from .failure_signal import resolve_embedded_run_failure_signal
from .outcome import (
    AgentRunTerminalOutcome,
    build_agent_run_terminal_outcome,
    merge_run_cleanup_outcome,
    resolve_run_liveness_state,
)
from .payloads import build_embedded_run_payloads
from .reply_payload import ReplyPayload
from .reply_stream import verbose_mode_for, verbose_tool_metas
from .request import RunErrorInfo, RunResult, defer_messages
from .run_error import INCOMPLETE_TURN_ERROR_KIND, describe_unfinished_turn, failed_run_error
from .run_models import deferred_messages
from .run_state import RunState
from .timeout_phase import run_timeout_fields

logger = package_logger(logging.getLogger("openclaw_runtime.runner"))

__all__ = [
    "after_backend_error",
    "backend_failed_result",
    "classify_candidate_result",
    "final_result",
    "result_from_candidate",
    "result_from_exhausted_chain",
    "result_from_failover_error",
    "storage_failure",
    "success_payloads",
]


def storage_failure(exc: BaseException) -> PluginBackendError | None:
    """The run's error for ``exc`` when it is a failure of the runtime's own storage: an
    ``OSError`` (a full disk, a permission, a file where a folder should be) from the
    embedded lanes, session index or session files under ``state_dir``, which have no plugin
    to attribute it to. ``None`` for anything else, timeouts included (``TimeoutError`` is an
    ``OSError``, and the run's own timeouts are not storage failures). Ends the run like a
    plugin backend's failure (``error.kind`` ``plugin``), naming the file the system named."""
    if not isinstance(exc, OSError) or isinstance(exc, TimeoutError):
        return None
    error = PluginBackendError(
        f"the runtime's storage failed: {type(exc).__name__}: {redact_secret_text(str(exc))}"
    )
    error.__cause__ = exc
    return error


def backend_failed_result(run: RunState, exc: PluginBackendError) -> RunResult:
    """A plugin's backend raised: the run ends with an error naming the plugin."""
    message = redact_secret_text(str(exc))
    return final_result(
        run,
        status="error",
        error=RunErrorInfo("plugin", message),
        payloads=[ReplyPayload(text=f"⚠️ {message}", is_error=True)],
    )


def after_backend_error(
    run: RunState, exc: PluginBackendError, reached: RunResult | None
) -> RunResult:
    """A backend failed; ``reached`` is the result the run had already produced (None: the
    failure came first). The cleanup failure only replaces it as
    ``merge_run_cleanup_outcome`` allows; when the reached result stands, the failure stays
    in ``run.faults`` (reported as ``plugin_fault`` before ``run_end``) and is logged."""
    failed = backend_failed_result(run, exc)
    if reached is None:
        return failed
    if merge_run_cleanup_outcome(reached.outcome, failed.outcome) is failed.outcome:
        return failed
    logger.warning(
        "run %s: cleanup failed after the run ended %s; the outcome stands: %s",
        run.run_id,
        reached.outcome.reason,
        redact_secret_text(str(exc)),
    )
    return reached


def classify_candidate_result(
    run: RunState, result: CandidateResult, candidate: ModelCandidate
) -> Any:
    """Does an ok candidate's reply still call for the next model (an empty or
    reasoning-only turn, a fallback-safe incomplete turn)? ``run_with_model_fallback``'s
    ``classify_result``. Keeps the candidate's payloads on it for the exhaustion merge."""
    if result.status != "ok":
        return None
    if result.payloads is None:
        result.payloads = success_payloads(run, result)
    return classify_embedded_agent_run_result_for_model_fallback(
        candidate.provider, candidate.model, candidate_result_view(result)
    )


def success_payloads(run: RunState, result: CandidateResult) -> list[ReplyPayload]:
    """The reply payloads of a candidate that answered, from the run's messages.

    Asked up to three times at the end of a run (the turn's payload count, the fallback
    classification, the final result) over the same state: the payloads are remembered on
    the run (``RunState.payload_memo``) under what they are built from — the session and its
    leaf, the answering message, the run's entries, the messaging sends, the thinking level —
    and built again only when one of those changed."""
    session = run.session
    sent = tuple(run.reply_observer.tracker.sent_texts)
    key = (
        session,
        None if session is None else session.get_leaf_id(),
        result.assistant,
        len(run.run_entry_ids),
        sent,
        run.thinking_level,
    )
    memo = run.payload_memo
    if memo is None or not _same_payload_key(memo[0], key):
        memo = run.payload_memo = (key, _build_success_payloads(run, result, sent))
    payloads = list(memo[1])
    if not payloads and result.incomplete_text:
        payloads = [ReplyPayload(text=result.incomplete_text, is_error=True)]
    return payloads


def _same_payload_key(old: tuple[Any, ...], new: tuple[Any, ...]) -> bool:
    # objects by identity (a session or message equal to another is still another one)
    return old[0] is new[0] and old[2] is new[2] and old[1] == new[1] and old[3:] == new[3:]


def _build_success_payloads(
    run: RunState, result: CandidateResult, sent: tuple[str, ...]
) -> list[ReplyPayload]:
    facts = run.run_facts()
    verbose = verbose_mode_for(run.request, run.config.agent.reply)
    metas = (
        verbose_tool_metas(run.run_messages(), verbose) if verbose != "off" else facts.tool_metas
    )
    payloads = build_embedded_run_payloads(
        assistant_texts=list(facts.assistant_texts),
        tool_metas=list(metas),
        verbose_level=verbose,
        inline_tool_results_allowed=verbose != "off",
        # read only without a current one (``current_assistant or ...``): not parsed then
        last_assistant=facts.assistant if result.assistant is None else None,
        current_assistant=result.assistant,
        last_tool_error=facts.last_tool_error,
        session_key=run.session_key or "",
        is_cron_trigger=run.request.trigger == "cron",
        thinking_level=run.thinking_level,
        messaging_tool_sent_texts=[*run.request.messaging_tool_sent_texts, *sent],
        current_message_id=run.request.current_message_id,
    )
    return payloads


def result_from_candidate(run: RunState, result: CandidateResult) -> RunResult:
    """The run's result from the candidate the model chain ended with."""
    if result.status == "ok":
        payloads = success_payloads(run, result)
        facts = run.run_facts()
        liveness = resolve_run_liveness_state(
            payload_count=len(payloads),
            aborted=False,
            timed_out=False,
            incomplete_turn_text=result.incomplete_text,
            last_assistant_stop_reason=result.assistant.stop_reason if result.assistant else None,
        )
        signal = resolve_embedded_run_failure_signal(run.request.trigger, facts.last_tool_error)
        return final_result(
            run,
            status="ok",
            payloads=payloads,
            stop_reason=result.assistant.stop_reason if result.assistant else None,
            liveness_state=liveness,
            provider_started=True,
            model=result.model,
            auth_profile_id=result.auth_profile_id,
            failure_signal=signal,
        )
    text = result.error_payload_text
    if text is None and result.assistant is not None:
        payloads = build_embedded_run_payloads(
            assistant_texts=[], current_assistant=result.assistant
        )
    else:
        payloads = [ReplyPayload(text=text or "The run failed.", is_error=True)]
    status = "timeout" if result.status == "timeout" else "error"
    timeout = (
        run_timeout_fields(result.timeout_phase, timed_out=result.timed_out)
        if status == "timeout"
        else None
    )
    return final_result(
        run,
        status=status,
        error=result.error,
        payloads=payloads,
        stop_reason="aborted"
        if result.status == "aborted"
        else (timeout.stop_reason if timeout is not None else None),
        liveness_state=None
        if timeout is not None and not timeout.liveness_applies
        else result.liveness_state or ("blocked" if result.status != "aborted" else None),
        timeout_phase=None if timeout is None else timeout.timeout_phase,
        provider_started=(result.timed_out or None)
        if timeout is None
        else timeout.provider_started,
        model=result.model,
        auth_profile_id=result.auth_profile_id,
    )


def result_from_exhausted_chain(
    run: RunState, result: CandidateResult, *, candidates: int = 1
) -> RunResult:
    """Every candidate (``candidates`` of them) failed and ``result`` is the exhaustion merge
    of the preserved one (``exhaustion``): an error outcome that shows its payloads and
    names the latest model."""
    payloads = list(result.payloads or ())
    if not payloads:
        text = result.incomplete_text or result.error_payload_text or "⚠️ The run failed."
        payloads = [ReplyPayload(text=text, is_error=True)]
    error = result.error
    if error is None:
        facts = run.run_facts()
        cause = describe_unfinished_turn(facts.last_tool_error, result.assistant)
        every = f"every model failed ({candidates}); " if candidates > 1 else ""
        error = RunErrorInfo(
            INCOMPLETE_TURN_ERROR_KIND,
            f"{every}{result.model.provider}/{result.model.id} ended without a visible "
            f"assistant reply: {cause}",
            "format",
        )
    return final_result(
        run,
        status="error",
        error=error,
        payloads=payloads,
        stop_reason=result.assistant.stop_reason if result.assistant else None,
        liveness_state=result.liveness_state or "blocked",
        provider_started=True,
        model=result.model,
        auth_profile_id=result.auth_profile_id,
    )


def result_from_failover_error(
    run: RunState, exc: BaseException, source: RunFailoverError | None
) -> RunResult:
    """The run's result when the model chain raised ``exc`` (``source``: the last
    candidate's hand-over, with what it had produced)."""
    reason = getattr(exc, "reason", None) if source is None else source.reason
    message = redact_secret_text(str(exc))
    partial = source.result if source is not None else None
    payloads: list[ReplyPayload]
    if partial is not None and partial.assistant is not None and partial.error_payload_text is None:
        payloads = build_embedded_run_payloads(
            assistant_texts=[], current_assistant=partial.assistant
        )
    else:
        text = partial.error_payload_text if partial is not None else None
        payloads = [ReplyPayload(text=text or f"⚠️ {message}", is_error=True)]
    kind = (
        "failover"
        if isinstance(exc, FailoverExhaustedError)
        else provider_error_kind(message, timed_out=False)
    )
    if partial is not None and partial.error is not None:
        kind = partial.error.kind
    return final_result(
        run,
        status="error",
        error=RunErrorInfo(
            kind, message, user_facing_reason(kind, None if reason is None else str(reason))
        ),
        payloads=payloads,
        liveness_state="blocked",
        model=partial.model if partial is not None else None,
        auth_profile_id=partial.auth_profile_id if partial is not None else None,
    )


def final_result(
    run: RunState,
    *,
    status: str,
    payloads: list[ReplyPayload],
    error: RunErrorInfo | None = None,
    stop_reason: str | None = None,
    liveness_state: str | None = None,
    timeout_phase: str | None = None,
    provider_started: bool | None = None,
    model: Model | None = None,
    auth_profile_id: str | None = None,
    failure_signal: Any = None,
) -> RunResult:
    """The ``RunResult``: every way a run ends comes through here."""
    ended = time.time() * 1000
    outcome: AgentRunTerminalOutcome = build_agent_run_terminal_outcome(
        status,  # type: ignore[arg-type]
        error=None if error is None else error.message,
        stop_reason=stop_reason,
        liveness_state=liveness_state,
        timeout_phase=timeout_phase,
        provider_started=provider_started,
        started_at=run.started_at,
        ended_at=ended,
    )
    if error is None and outcome.status != "ok":
        # the one place the rule "every failed run says why" is enforced
        facts = run.run_facts()
        error = failed_run_error(
            outcome,
            None,
            cause=describe_unfinished_turn(facts.last_tool_error, facts.assistant),
        )
    session = run.session
    result = RunResult(
        run_id=run.run_id,
        session_id=run.session_id,
        session_key=run.session_key,
        session_file=None if session is None else str(session.path),
        outcome=outcome,
        payloads=payloads,
        usage=run.usage.to_usage(),
        provider=None if model is None else model.provider,
        model=None if model is None else model.id,
        auth_profile_id=auth_profile_id,
        attempts=run.total_attempts,
        compactions=run.total_compactions,
        messages=[],  # made from the entries when first read (``defer_messages``)
        error=error,
        failure_signal=failure_signal,
        liveness_state=outcome.liveness_state,
        duration_ms=(time.perf_counter() - run.perf_start) * 1000,
        faults=run.faults,  # the run's own list: faults while run_end is observed count
    )
    return defer_messages(result, deferred_messages(run.run_entries()))
