"""Context: what the model sees, and the defences that keep it inside the window.

* context engines (``engine`` the contract, ``legacy`` the built-in one, ``registry`` the slot
  with its quarantine proxy, ``lifecycle``, ``delegate``) assemble and compact a session;
* ``compaction`` is the runtime's own summarize-and-keep-a-tail compaction;
* the context-window defences the runner applies around each model call: token estimation
  (``tokens``), tool-result limits and truncation (``limits``, ``truncation``), the
  tool-result context guard (``guard``), preemptive compaction and prompt refusal
  (``preemptive``) and duplicate-user dedupe (``dedupe``).

Layering: ``context`` sits above ``transcript`` (compaction reads session branches through
``transcript.session_context``); ``transcript`` never imports ``context``. This face
re-exports the names the runner uses and the types ``Runtime``'s signatures name
(``CompactResult``, ``ContextEngineSlot``); everything else is imported from its module.
"""

import typing as _typing

from .._lazy_face import lazy_getattr as _lazy_getattr

if _typing.TYPE_CHECKING:  # the same names, eagerly, for type checkers
    # fmt: off
    from .engine import CompactResult, ContextEngine  # noqa: I001 (packed: face ≤ 100 lines)
    from .guard import (
        MidTurnPrecheckOptions, install_tool_result_context_guard,
        is_mid_turn_precheck_error_message,
    )
    from .preemptive import (
        format_prompt_too_large_message, resolve_prompt_budget,
        should_preemptively_compact_before_prompt, should_refuse_prompt_before_sending,
    )
    from .registry import ContextEngineSlot
    from .tokens import (
        estimate_llm_boundary_token_pressure, estimate_rendered_llm_boundary_token_pressure,
    )
    from .truncation import (
        session_likely_has_oversized_tool_results, truncate_oversized_tool_results_in_messages,
    )
    # fmt: on

#: module -> the public names it provides, each imported on first use (start-up time)
_LAZY = {
    "engine": "CompactResult ContextEngine",
    "guard": (
        "MidTurnPrecheckOptions install_tool_result_context_guard "
        "is_mid_turn_precheck_error_message"
    ),
    "preemptive": (
        "format_prompt_too_large_message resolve_prompt_budget "
        "should_preemptively_compact_before_prompt should_refuse_prompt_before_sending"
    ),
    "registry": "ContextEngineSlot",
    "tokens": "estimate_llm_boundary_token_pressure estimate_rendered_llm_boundary_token_pressure",
    "truncation": (
        "session_likely_has_oversized_tool_results truncate_oversized_tool_results_in_messages"
    ),
}
__getattr__ = _lazy_getattr(__name__, _LAZY)


__all__ = [
    "CompactResult", "ContextEngine", "ContextEngineSlot", "MidTurnPrecheckOptions",
    "estimate_llm_boundary_token_pressure", "estimate_rendered_llm_boundary_token_pressure",
    "format_prompt_too_large_message", "install_tool_result_context_guard",
    "is_mid_turn_precheck_error_message", "resolve_prompt_budget",
    "session_likely_has_oversized_tool_results", "should_preemptively_compact_before_prompt",
    "should_refuse_prompt_before_sending", "truncate_oversized_tool_results_in_messages",
]  # fmt: skip
