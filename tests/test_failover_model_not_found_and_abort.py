"""Tables for the two failover rules of issue 15 §3: ``model_not_found`` never rotates the
auth profile, and an aborted result ends the model-fallback chain without a success."""

from __future__ import annotations

from typing import Any

import pytest

from openclaw_runtime.failover.aborted_result import is_aborted_run_result
from openclaw_runtime.failover.fallback import run_with_model_fallback
from openclaw_runtime.failover.policy import (
    AssistantDecisionInput,
    AttemptTerminal,
    FailoverDecision,
    PromptDecisionInput,
    resolve_run_failover_decision,
    should_rotate_prompt,
)
from openclaw_runtime.failover.reasons import FailoverReason

pytestmark = pytest.mark.anyio

NOT_FOUND = FailoverReason.MODEL_NOT_FOUND


def _assistant(reason: FailoverReason | None, *, fallback: bool, rotated: bool = False):
    return AssistantDecisionInput(
        terminal=AttemptTerminal("ok"),
        fallback_configured=fallback,
        failover_failure=reason is not None,
        failover_reason=reason,
        profile_rotated=rotated,
    )


def _prompt(reason: FailoverReason | None, *, fallback: bool, rotated: bool = False):
    return PromptDecisionInput(
        external_abort=False,
        fallback_configured=fallback,
        failover_failure=reason is not None,
        failover_reason=reason,
        profile_rotated=rotated,
    )


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        # model_not_found: straight to the next model, never another profile
        (_assistant(NOT_FOUND, fallback=True), FailoverDecision("fallback_model", NOT_FOUND)),
        (_assistant(NOT_FOUND, fallback=False), FailoverDecision("surface_error", NOT_FOUND)),
        (_prompt(NOT_FOUND, fallback=True), FailoverDecision("fallback_model", NOT_FOUND)),
        (_prompt(NOT_FOUND, fallback=False), FailoverDecision("surface_error", NOT_FOUND)),
        # the other reasons keep rotating first
        (
            _assistant(FailoverReason.RATE_LIMIT, fallback=True),
            FailoverDecision("rotate_profile", FailoverReason.RATE_LIMIT),
        ),
        (
            _prompt(FailoverReason.AUTH, fallback=True),
            FailoverDecision("rotate_profile", FailoverReason.AUTH),
        ),
        (
            _assistant(FailoverReason.RATE_LIMIT, fallback=True, rotated=True),
            FailoverDecision("fallback_model", FailoverReason.RATE_LIMIT),
        ),
    ],
)
def test_model_not_found_decisions(params: Any, expected: FailoverDecision) -> None:
    assert resolve_run_failover_decision(params) == expected


def test_model_not_found_after_an_external_abort_still_surfaces() -> None:
    params = AssistantDecisionInput(
        terminal=AttemptTerminal("aborted", source="external"),
        fallback_configured=True,
        failover_failure=True,
        failover_reason=NOT_FOUND,
        profile_rotated=False,
    )
    assert resolve_run_failover_decision(params).action == "surface_error"


def test_should_rotate_prompt_excludes_model_not_found() -> None:
    assert not should_rotate_prompt(_prompt(NOT_FOUND, fallback=True))
    assert should_rotate_prompt(_prompt(FailoverReason.BILLING, fallback=True))


class _Status:
    def __init__(self, status: str) -> None:
        self.status = status


@pytest.mark.parametrize(
    ("result", "aborted"),
    [
        (_Status("aborted"), True),
        (_Status("Cancelled"), True),
        (_Status("ok"), False),
        (_Status("error"), False),
        ({"status": "canceled"}, True),
        ({"aborted": True}, True),
        ({"meta": {"aborted": True}}, True),
        ({"meta": {"aborted": False}}, False),
        ({"aborted": "yes"}, False),  # only a real True counts
        ("aborted", False),
        (None, False),
    ],
)
def test_is_aborted_run_result(result: Any, aborted: bool) -> None:
    assert is_aborted_run_result(result) is aborted


async def test_an_aborted_result_ends_the_chain_without_success() -> None:
    events: list[Any] = []
    tried: list[str] = []

    async def attempt(candidate: Any) -> Any:
        tried.append(candidate.model)
        return _Status("aborted")

    async def emit(event: Any) -> None:
        events.append(event.type)

    chain = await run_with_model_fallback(["p/a", "p/b"], attempt, emit=emit)
    assert chain.outcome == "aborted" and chain.candidate.model == "a"
    assert tried == ["a"]
    assert events == ["fallback_attempt_start"]


async def test_a_custom_abort_predicate_is_honoured() -> None:
    async def attempt(candidate: Any) -> Any:
        return {"state": "stopped"}

    chain = await run_with_model_fallback(
        ["p/a", "p/b"], attempt, result_aborted=lambda r: r.get("state") == "stopped"
    )
    assert chain.outcome == "aborted"


async def test_a_completed_result_still_succeeds() -> None:
    events: list[str] = []

    async def attempt(candidate: Any) -> Any:
        return _Status("ok")

    async def emit(event: Any) -> None:
        events.append(event.type)

    chain = await run_with_model_fallback(["p/a"], attempt, emit=emit)
    assert chain.outcome == "completed"
    assert events == ["fallback_attempt_start", "fallback_succeeded"]
