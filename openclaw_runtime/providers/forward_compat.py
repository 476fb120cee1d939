"""Forward-compatible model resolution (seed 004, stage 2): a newer model of a known family.

Providers ship models faster than catalogs. When a configured model is unknown but its family
is known (``anthropic/claude-sonnet-4-7`` while the catalog has ``claude-sonnet-4-5``;
``openai/gpt-4.2-mini`` while it has ``gpt-4.1-mini``), the run uses the closest known
definition as a template (window, output cap, reasoning, prices, API) under the requested id,
and says so with a warning, instead of failing with "unknown model".

OpenClaw's ``resolveForwardCompatModel`` does this with one hand-written rule per family
(opus 4.6 from 4.5, sonnet 4.6 from 4.5, glm-5 from glm-4.7...). This twin is generic: an id is
split on ``-`` and ``.`` into its name tokens (the family) and its numeric tokens (the
version); date snapshots (six digits or more) are ignored. The template is the same provider's
model of the same family with the highest version not above the requested one (else the lowest
above it). A request without a version, or with a family two providers share and no provider
prefix, does not resolve: guessing there would pick a model the user did not mean.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..llm import Model

__all__ = ["ForwardCompatMatch", "model_family", "resolve_forward_compat_model"]

_SPLIT = re.compile(r"[-.]")
_SNAPSHOT_DIGITS = 6


@dataclass(frozen=True, slots=True)
class ForwardCompatMatch:
    """``model``: the template's definition under the requested id; ``template``: its ref."""

    model: Model
    template: str

    def warning(self) -> str:
        """The line a user sees once."""
        return (
            f"model {self.model.ref!r} is not in the catalog; using the definition of "
            f"{self.template!r} (same family) for it: context window "
            f"{self.model.context_window}, max output {self.model.max_tokens} tokens"
        )


def model_family(model_id: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """``(family tokens, version numbers)`` of a model id, date snapshots dropped."""
    names: list[str] = []
    version: list[int] = []
    for token in _SPLIT.split(model_id.strip().lower()):
        if not token:
            continue
        if token.isdigit():
            if len(token) < _SNAPSHOT_DIGITS:
                version.append(int(token))
            continue
        names.append(token)
    return tuple(names), tuple(version)


def _pad(version: tuple[int, ...], width: int) -> tuple[int, ...]:
    return version + (0,) * (width - len(version))


def resolve_forward_compat_model(name: str, models: Iterable[Model]) -> ForwardCompatMatch | None:
    """The closest known definition for the unknown ``name`` (``provider/id`` or ``id``), or
    ``None`` when no known model of the same provider and family has a version."""
    provider: str | None = None
    model_id = name.strip()
    if "/" in model_id:
        provider, model_id = (part.strip() for part in model_id.split("/", 1))
    family, version = model_family(model_id)
    if not family or not version:
        return None
    candidates: list[tuple[tuple[int, ...], Model]] = []
    for model in models:
        if provider is not None and model.provider != provider:
            continue
        if model.id == model_id:
            return None  # known after all: not ours to resolve
        known_family, known_version = model_family(model.id)
        if known_family == family and known_version:
            candidates.append((known_version, model))
    if not candidates or len({m.provider for _, m in candidates}) > 1:
        return None
    width = max(len(version), *(len(v) for v, _ in candidates))
    wanted = _pad(version, width)
    ranked = sorted(candidates, key=lambda c: (_pad(c[0], width), c[1].id))
    below = [c for c in ranked if _pad(c[0], width) <= wanted]
    _, template = below[-1] if below else ranked[0]
    resolved = template.model_copy(update={"id": model_id, "name": model_id})
    return ForwardCompatMatch(resolved, template.ref)
