"""Which thinking levels a model supports, and the nearest one to a requested level.

A model's ``thinking_level_map`` (OpenClaw/pi's ``thinkingLevelMap``) says how each level is
spelled for its provider; ``None`` marks a level the model does not offer, and the top levels
``xhigh`` and ``max`` exist only when the map names them. When a turn swaps the model
(``prepare_next_turn``) the requested level must be re-clamped for the new model, or a level
the new model lacks would be sent and rejected. Clamping looks upward first (a stronger level
the model has), then downward, as pi's ``clampThinkingLevel`` does.
"""

from __future__ import annotations

from typing import get_args

from ..llm import Model, ThinkingLevel

__all__ = ["THINKING_LEVELS", "clamp_thinking_level", "supported_thinking_levels"]

#: Every level, weakest first.
THINKING_LEVELS: tuple[ThinkingLevel, ...] = get_args(ThinkingLevel)
_MAP_ONLY = frozenset({"xhigh", "max"})


def supported_thinking_levels(model: Model) -> list[ThinkingLevel]:
    """OpenClaw's ``getSupportedThinkingLevels``: ``["off"]`` for a non-reasoning model."""
    if not model.reasoning:
        return ["off"]
    level_map = model.thinking_level_map or {}
    supported: list[ThinkingLevel] = []
    for level in THINKING_LEVELS:
        if level in level_map and level_map[level] is None:
            continue  # the model does not offer it
        if level in _MAP_ONLY and level not in level_map:
            continue
        supported.append(level)
    return supported


def clamp_thinking_level(model: Model, level: ThinkingLevel) -> ThinkingLevel:
    """OpenClaw's ``clampThinkingLevel``: ``level`` if supported, else the nearest one
    (upward first, then downward)."""
    available = supported_thinking_levels(model)
    if level in available:
        return level
    if level not in THINKING_LEVELS:
        return available[0] if available else "off"
    index = THINKING_LEVELS.index(level)
    for candidate in THINKING_LEVELS[index:]:
        if candidate in available:
            return candidate
    for candidate in reversed(THINKING_LEVELS[:index]):
        if candidate in available:
            return candidate
    return available[0] if available else "off"
