"""The pure decisions of ``before_agent_finalize`` and the cron ``before_agent_reply`` claim.

Tables: how a hook's return becomes a decision, how several plugins' decisions merge
(OpenClaw's hook runner: ``finalize`` wins, revision reasons are joined), when the hook is
consulted at all, the revision prompt, and how a cron claim is read.
"""

from __future__ import annotations

from typing import Any

import pytest

from openclaw_runtime.runner.cron_reply import (
    ReplyClaim,
    normalize_reply_claim,
    offers_before_agent_reply,
)
from openclaw_runtime.runner.finalize import (
    BEFORE_AGENT_FINALIZE_RETRY_PROMPT_PREFIX,
    MAX_BEFORE_AGENT_FINALIZE_REVISIONS,
    FinalizeDecision,
    build_before_agent_finalize_retry_prompt,
    merge_finalize_decisions,
    normalize_finalize_decision,
    should_consult_finalize_hook,
)

C = FinalizeDecision()
REVISE = FinalizeDecision("revise", "cite it")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, C),
        ("cite it", REVISE),
        ("   ", C),
        (REVISE, REVISE),
        (FinalizeDecision("revise", "  cite it  "), REVISE),
        (FinalizeDecision("revise", None), C),
        (FinalizeDecision("finalize"), FinalizeDecision("finalize")),
        ({"action": "revise", "reason": "cite it"}, REVISE),
        ({"action": "revise", "reason": "why", "retry": {"instruction": "cite it"}}, REVISE),
        ({"action": "revise", "retry": {"instruction": "  "}}, C),
        ({"action": "finalize", "reason": " ok "}, FinalizeDecision("finalize", "ok")),
        ({"action": "continue", "reason": "fine"}, C),
        ({"action": "explode"}, C),
        ({}, C),
    ],
)
def test_normalize_finalize_decision(value: Any, expected: FinalizeDecision) -> None:
    assert normalize_finalize_decision(value) == expected


def test_normalize_finalize_decision_rejects_other_types() -> None:
    with pytest.raises(TypeError, match="before_agent_finalize must return"):
        normalize_finalize_decision(42)


@pytest.mark.parametrize(
    ("decisions", "expected"),
    [
        ([], C),
        ([C, C], C),
        ([REVISE], REVISE),
        ([C, REVISE, C], REVISE),
        (
            [REVISE, FinalizeDecision("revise", "shorter")],
            FinalizeDecision("revise", "cite it\n\nshorter"),
        ),
        ([REVISE, FinalizeDecision("finalize", "gate")], FinalizeDecision("finalize", "gate")),
        ([FinalizeDecision("finalize"), REVISE], FinalizeDecision("finalize")),
    ],
)
def test_merge_finalize_decisions(
    decisions: list[FinalizeDecision], expected: FinalizeDecision
) -> None:
    assert merge_finalize_decisions(decisions) == expected


@pytest.mark.parametrize(
    ("revisions", "payloads", "consult"),
    [
        (0, 1, True),
        (MAX_BEFORE_AGENT_FINALIZE_REVISIONS - 1, 1, True),
        (MAX_BEFORE_AGENT_FINALIZE_REVISIONS, 1, False),
        (0, 0, False),  # nothing visible to judge
    ],
)
def test_should_consult_finalize_hook(revisions: int, payloads: int, consult: bool) -> None:
    assert (
        should_consult_finalize_hook(revisions_so_far=revisions, payload_count=payloads) is consult
    )


def test_revision_prompt_is_the_prefix_a_blank_line_and_the_reason() -> None:
    assert MAX_BEFORE_AGENT_FINALIZE_REVISIONS == 3
    assert build_before_agent_finalize_retry_prompt("cite it") == (
        f"{BEFORE_AGENT_FINALIZE_RETRY_PROMPT_PREFIX}\n\ncite it"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("Nothing new.", ReplyClaim("Nothing new.")),
        (ReplyClaim("x"), ReplyClaim("x")),
        (ReplyClaim("x", handled=False), None),
        ({"handled": False, "reply": {"text": "x"}}, None),
        ({"handled": True, "reply": {"text": "x"}, "reason": "digest"}, ReplyClaim("x", "digest")),
        ({"handled": True}, ReplyClaim(None)),
        ({"handled": True, "reply": {"text": "  "}}, ReplyClaim(None)),
        ({"handled": True, "reply": "plain"}, ReplyClaim("plain")),
    ],
)
def test_normalize_reply_claim(value: Any, expected: ReplyClaim | None) -> None:
    assert normalize_reply_claim(value) == expected


@pytest.mark.parametrize(
    ("trigger", "offered"),
    [("cron", True), ("user", False), ("manual", False), ("heartbeat", False)],
)
def test_only_cron_runs_are_offered(trigger: str, offered: bool) -> None:
    assert offers_before_agent_reply(trigger) is offered
