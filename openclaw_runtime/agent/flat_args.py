"""Tool arguments that certainly satisfy their schema: the fast path of argument validation.

``validate_tool_arguments`` deep-copies the model's arguments and asks ``jsonschema`` whether
they are valid (≈ 10 µs per call, most of a cheap tool call's own cost). The common call is a
flat object of strings and numbers checked against a flat object schema — what ``@tool``
derives from a function with scalar parameters. For that shape the answer is certain from a
few type checks, and a shallow copy is as independent as a deep one (the values are
immutable). ``flat_valid_copy`` gives that copy when the arguments are certainly valid and
``None`` otherwise; ``None`` sends the caller down the full path, which also produces the
error text, so an invalid call or any schema keyword this module does not know (``enum``,
``pattern``, ``format``, ``$ref``, ``anyOf``, ``$schema``, ...) behaves exactly as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["flat_schema_plan", "flat_valid_copy"]

#: keywords that only annotate (no effect on validity)
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "deprecated"})
_TOP_KEYS = _ANNOTATIONS | {"type", "properties", "required", "additionalProperties"}
_PROPERTY_KEYS = _ANNOTATIONS | {"type"}
#: the Python types each scalar JSON type certainly accepts (exact types: no bool as int)
_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}
_SCALARS = frozenset({str, int, float, bool, type(None)})

#: a flat schema's plan: property name -> accepted types, the required names, and whether
#: names outside the properties are allowed
FlatPlan = tuple[dict[str, tuple[type, ...]], tuple[str, ...], bool]

_plans: dict[int, tuple[Mapping[str, Any], FlatPlan | None]] = {}


def flat_schema_plan(schema: Mapping[str, Any]) -> FlatPlan | None:
    """The plan of a flat object schema (scalar-typed properties, ``required``, a boolean
    ``additionalProperties``, annotations); ``None`` for anything else."""
    if not isinstance(schema, dict) or schema.get("type") != "object":
        return None
    if any(key not in _TOP_KEYS for key in schema):
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, dict) or not isinstance(required, list):
        return None
    if not isinstance(extra, bool) or not all(isinstance(name, str) for name in required):
        return None
    types: dict[str, tuple[type, ...]] = {}
    for name, prop in properties.items():
        if not isinstance(prop, dict) or any(key not in _PROPERTY_KEYS for key in prop):
            return None
        kind = prop.get("type")
        accepted = _TYPES.get(kind) if isinstance(kind, str) else None
        if accepted is None:  # no type, a list of types, or a non-scalar type
            return None
        types[name] = accepted
    return types, tuple(required), extra


def _plan_for(schema: Mapping[str, Any]) -> FlatPlan | None:
    cached = _plans.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    plan = flat_schema_plan(schema)
    if len(_plans) > 1024:
        _plans.clear()
    _plans[id(schema)] = (schema, plan)
    return plan


def flat_valid_copy(schema: Mapping[str, Any], arguments: Any) -> dict[str, Any] | None:
    """A copy of ``arguments`` when they certainly satisfy the flat ``schema``, else ``None``.

    The schema is assumed unchanged while it is the same object (as the validator cache
    assumes)."""
    if type(arguments) is not dict:
        return None
    plan = _plan_for(schema)
    if plan is None:
        return None
    types, required, extra = plan
    for name, value in arguments.items():
        if type(value) not in _SCALARS:
            return None
        accepted = types.get(name)
        if accepted is None:
            if not extra:
                return None
        elif type(value) not in accepted:
            return None
    for name in required:
        if name not in arguments:
            return None
    return dict(arguments)
