"""The ``openclaw-runtime tools`` text: offered tools, then each removed one with the layer,
config key and rule that removed it. Pure formatting of ``pipeline.ToolDecision``-s."""

from __future__ import annotations

from collections.abc import Sequence

from .pipeline import ToolDecision

__all__ = ["format_tool_decisions"]


def format_tool_decisions(decisions: Sequence[ToolDecision], *, heading: str = "") -> str:
    """Offered tools (name, owner-only mark, summary), then removed ones (name, layer, config
    key, rule); one line each."""
    lines = [heading] if heading else []
    offered = [d for d in decisions if d.offered]
    removed = [d for d in decisions if not d.offered]
    lines.append(f"offered ({len(offered)}):")
    for d in offered:
        mark = " [owner-only]" if d.owner_only else ""
        summary = f" — {d.summary}" if d.summary else ""
        lines.append(f"  {d.name}{mark}{summary}")
    if not offered:
        lines.append("  (none)")
    lines.append(f"removed ({len(removed)}):")
    for d in removed:
        lines.append(f"  {d.name}: removed by the {d.layer} layer ({d.source}): {d.rule}")
    if not removed:
        lines.append("  (none)")
    return "\n".join(lines)
