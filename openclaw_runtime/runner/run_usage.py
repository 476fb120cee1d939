"""``UsageAccumulator``: what a run cost, over every model call of every attempt.

Token usage and cost are summed over all calls; the last call's usage is kept separately
because it, not the sum, reflects the size of the context.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..messages import AssistantMessage, Cost, Usage, built_unvalidated

__all__ = [
    "UsageAccumulator",
]


def _number(value: object) -> float:
    if type(value) is int or type(value) is float:  # the usual case, answered the same
        return value
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return value


_EXACT_NUMBERS = frozenset({int, float})
_COST_SET = frozenset(Cost._always_written)


def _summed_cost(total: Cost, cost: Cost) -> Cost:
    """A new ``Cost``: ``total`` plus ``cost``'s numbers (non-numbers count as 0).

    Sums of exact ``int`` / ``float`` are what validating them as ``int | float`` returns
    unchanged, so that ``Cost`` is built without validation; any other sum (a subclass
    someone set on a ``Cost``) is validated as before.
    """
    parts: tuple[float, ...] = (
        cost.input,
        cost.output,
        cost.cache_read,
        cost.cache_write,
        cost.total,
    )
    if not _EXACT_NUMBERS.issuperset(map(type, parts)):  # ``_number`` keeps exact ones
        parts = tuple(map(_number, parts))
    values = {
        "input": total.input + parts[0],
        "output": total.output + parts[1],
        "cache_read": total.cache_read + parts[2],
        "cache_write": total.cache_write + parts[3],
        "total": total.total + parts[4],
    }
    if _EXACT_NUMBERS.issuperset(map(type, values.values())):
        return built_unvalidated(Cost, values, set(_COST_SET))
    return Cost(**values)


@dataclass
class UsageAccumulator:
    """Token usage and cost summed over every model call of a run (all attempts).

    ``add`` takes a ``Usage`` or an OpenClaw usage dict (``input``, ``output``,
    ``cacheRead``, ``cacheWrite``, ``totalTokens``/``total``, ``cost``). ``last_call`` keeps
    the most recent call's usage: cache reads repeat the whole context on every call, so
    only the last call — not the sum — says how big the context is.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = field(default_factory=Cost)
    calls: int = 0
    last_call: Usage | None = None

    def add(self, usage: Usage | Mapping[str, Any] | None) -> None:
        """Count one call's usage (None is ignored)."""
        if usage is None:
            return
        if not isinstance(usage, Usage):
            if not isinstance(usage, Mapping):
                raise TypeError(f"usage must be a Usage or a mapping, got {type(usage).__name__}")
            data = dict(usage)
            if "total" in data and "totalTokens" not in data:
                data["totalTokens"] = data.pop("total")
            usage = Usage.model_validate({k: v for k, v in data.items() if not isinstance(v, bool)})
        self.input += usage.input
        self.output += usage.output
        self.cache_read += usage.cache_read
        self.cache_write += usage.cache_write
        self.total_tokens += usage.total_tokens or (
            usage.input + usage.output + usage.cache_read + usage.cache_write
        )
        self.cost = _summed_cost(self.cost, usage.cost)
        self.calls += 1
        self.last_call = usage

    def add_message(self, message: AssistantMessage) -> None:
        """Count the usage of one assistant message."""
        self.add(message.usage)

    def to_usage(self) -> Usage:
        """The sum as a ``Usage`` (what ``agentMeta.usage`` reports)."""
        return Usage(
            input=self.input,
            output=self.output,
            cache_read=self.cache_read,
            cache_write=self.cache_write,
            total_tokens=self.total_tokens,
            cost=self.cost,
        )
