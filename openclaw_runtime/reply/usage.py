"""The one-line token usage the CLI prints after a run.

``RunResult.usage`` already sums every model call of every attempt (the runner's
``UsageAccumulator``); this renders it for people: ``usage: 120 in · 48 out · 30 cache read ·
0 cache write · 198 total``, plus `` · $0.0042`` when the model is priced.
"""

from __future__ import annotations

from ..messages import Usage

__all__ = ["format_usage_line"]


def format_usage_line(usage: Usage) -> str:
    """``usage`` as one line (see the module docstring)."""
    line = (
        f"usage: {usage.input} in · {usage.output} out · {usage.cache_read} cache read · "
        f"{usage.cache_write} cache write · {usage.total_tokens} total"
    )
    cost = float(usage.cost.total or 0)
    if cost > 0:
        line += f" · ${cost:.4f}"
    return line
