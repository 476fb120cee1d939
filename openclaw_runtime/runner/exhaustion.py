"""Every model of the fallback chain failed: which candidate's result the user sees.

OpenClaw's embedded run entry hands ``runWithModelFallback`` two callbacks: the result
classifier (spec §11.4) and ``mergeEmbeddedAgentRunResultForModelFallbackExhaustion``. A
candidate that *answered* but amounts to nothing (an empty or reasoning-only turn, an
incomplete turn no tool side effect stands in the way of redoing) is rejected and the next
model tries; a fallback-safe incomplete turn is also kept ("preserved") so that, when every
candidate failed, the run ends on it rather than on a summary of errors. What it shows:

* the **latest** rejected candidate's bookkeeping (model, auth profile, harness
  classification, liveness, timing flags): that is what ran last;
* the **most credible** payload: the preserved result with the highest priority (ties go to
  the later one), i.e. its payloads, error, error payload text and final assistant turn;
* **no winner**: the run's outcome is an error, and no ``fallback_succeeded`` is emitted.

The functions here are pure: ``candidate_result_view`` is what the classifier reads of a
``CandidateResult``, ``merge_candidate_results_for_exhaustion`` is the merge's twin on
``CandidateResult`` (the same rules as the spec function on ``EmbeddedRunResult``).
"""

from __future__ import annotations

import dataclasses

from ..failover import EmbeddedRunResult, RunPayload
from .candidate import CandidateResult
from .run_error import INCOMPLETE_TURN_ERROR_KIND

__all__ = ["candidate_result_view", "merge_candidate_results_for_exhaustion"]


def candidate_result_view(result: CandidateResult) -> EmbeddedRunResult:
    """What ``classify_embedded_agent_run_result_for_model_fallback`` needs to know of an
    answered candidate: its payloads (taken when it ended), its harness classification and,
    for a turn that ended without an answer (``incomplete_text``), an ``incomplete_turn``
    error that is fallback-safe only when no tool with side effects ran."""
    incomplete = result.incomplete_text is not None
    return EmbeddedRunResult(
        payloads=tuple(
            RunPayload(
                text=payload.text,
                is_error=bool(payload.is_error),
                is_reasoning=bool(payload.is_reasoning),
            )
            for payload in result.payloads or ()
        ),
        error_kind=INCOMPLETE_TURN_ERROR_KIND if incomplete else None,
        error_fallback_safe=incomplete and result.fallback_safe,
        harness_classification=result.harness_classification,  # type: ignore[arg-type]
    )


def merge_candidate_results_for_exhaustion(
    latest: CandidateResult, preferred: CandidateResult
) -> CandidateResult:
    """The result shown when every candidate failed: ``latest``'s bookkeeping with
    ``preferred``'s presentation (module docstring). ``latest is preferred`` returns it."""
    if latest is preferred:
        return latest
    return dataclasses.replace(
        latest,
        assistant=preferred.assistant,
        error=preferred.error,
        error_payload_text=preferred.error_payload_text,
        incomplete_text=preferred.incomplete_text,
        fallback_safe=preferred.fallback_safe,
        payloads=None if preferred.payloads is None else list(preferred.payloads),
    )
