"""Tool-schema cleanup for Gemini (OpenClaw's ``cleanSchemaForGemini``).

Gemini's function declarations take an OpenAPI-3.0 subset of JSON Schema and answer 400 to
the rest. ``clean_schema_for_gemini`` rewrites a tool schema into that subset without
changing what the tool accepts more than it must:

* unsupported keywords are dropped (``GEMINI_UNSUPPORTED_SCHEMA_KEYWORDS``: ``$ref`` after
  inlining, ``$defs``, ``additionalProperties``, ``patternProperties``, string/number/array
  constraints, ``not``...);
* local ``$ref`` pointers into ``$defs`` / ``definitions`` are inlined (percent-encoded
  fragments too), keeping the referring node's description/title/default; a reference cycle
  ends in ``{}``;
* ``const`` becomes a one-value ``enum``; enum values become strings (Google requires it) and
  the declared ``type`` stays;
* ``anyOf`` / ``oneOf``: null variants are removed (``T | null`` becomes ``T``), literal
  unions become an ``enum``, anything else collapses to a representative ``type``;
* ``allOf`` is merged into one schema when the parts are compatible, otherwise widened to an
  object with every property (Gemini rejects ``allOf``);
* ``type: ["string", "null"]`` becomes ``"string"``; ``required`` keeps only names present
  in ``properties`` and disappears when empty.

The input is never mutated.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote

import orjson

__all__ = ["GEMINI_UNSUPPORTED_SCHEMA_KEYWORDS", "clean_schema_for_gemini"]

GEMINI_UNSUPPORTED_SCHEMA_KEYWORDS: frozenset[str] = frozenset(
    {
        "~optional",
        "patternProperties",
        "additionalProperties",
        "$schema",
        "$id",
        "$ref",
        "$defs",
        "definitions",
        "examples",
        "minLength",
        "maxLength",
        "minimum",
        "maximum",
        "multipleOf",
        "pattern",
        "format",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minProperties",
        "maxProperties",
        "not",
    }
)
_META_KEYS = ("description", "title", "default")
_CIRCULAR = "Tool schema contains a circular reference."


def clean_schema_for_gemini(schema: Any) -> Any:
    """``schema`` rewritten into the JSON-Schema subset Gemini accepts (a new object)."""
    if not isinstance(schema, dict | list):
        return schema
    cleaned = _clean(schema, None, frozenset(), set())
    return _remove_surviving_all_of(cleaned)


# --------------------------------------------------------------------------- helpers


def _truthy(value: Any) -> bool:
    """JavaScript truthiness (``{}`` and ``[]`` are true, ``0``/``""``/``null`` false)."""
    if value is None or value is False:
        return False
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def _copy_meta(source: Mapping[str, Any], target: dict[str, Any]) -> dict[str, Any]:
    for key in _META_KEYS:
        if key in source:
            target[key] = source[key]
    return target


def _js_string(value: Any) -> str | None:
    """``String(value)`` for the enum values Google accepts (strings, finite numbers, bools)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        text = repr(value)
        mantissa, _, exponent = text.partition("e")
        if not exponent:
            return text
        sign = "-" if exponent.startswith("-") else "+"
        return f"{mantissa}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"
    return None


def _enum_values(values: Any) -> list[str] | None:
    if not isinstance(values, list):
        return None
    unique: list[str] = []
    for entry in values:
        text = _js_string(entry)
        if text is not None and text not in unique:
            unique.append(text)
    return unique or None


def _same(left: Any, right: Any) -> bool:
    """``JSON.stringify`` equality (key order matters, as it does there)."""
    try:
        return orjson.dumps(left) == orjson.dumps(right)
    except TypeError:
        return left == right


def _is_null_schema(variant: Any) -> bool:
    if not isinstance(variant, dict):
        return False
    if "const" in variant and variant["const"] is None:
        return True
    enum = variant.get("enum")
    if isinstance(enum, list) and len(enum) == 1:
        return enum[0] is None
    kind = variant.get("type")
    return kind == "null" or (isinstance(kind, list) and kind == ["null"])


def _extend_defs(defs: dict[str, Any] | None, schema: Mapping[str, Any]) -> dict[str, Any] | None:
    found = [schema.get(key) for key in ("$defs", "definitions")]
    tables = [table for table in found if isinstance(table, dict)]
    if not tables:
        return defs
    merged = dict(defs or {})
    for table in tables:
        merged.update(table)
    return merged


def _resolve_local_ref(ref: str, defs: dict[str, Any] | None) -> Any:
    """``#/$defs/<name>`` or ``#/definitions/<name>`` (the fragment may be percent-encoded)."""
    if defs is None or not ref.startswith("#"):
        return None
    fragment = unquote(ref[1:])
    if not fragment.startswith("/"):
        return None
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in fragment[1:].split("/")]
    if len(tokens) != 2 or tokens[0] not in ("$defs", "definitions") or not tokens[1]:
        return None
    return defs.get(tokens[1])


def _sanitize_required(schema: dict[str, Any]) -> dict[str, Any]:
    required = schema.get("required")
    if not isinstance(required, list):
        return schema
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        if schema.get("type") == "object":
            del schema["required"]
        return schema
    kept = [name for name in required if isinstance(name, str) and name in properties]
    if kept:
        schema["required"] = kept
    else:
        del schema["required"]
    return schema


# --------------------------------------------------------------------------- unions


def _flatten_literal_union(variants: list[Any]) -> dict[str, Any] | None:
    if not variants:
        return None
    values: list[Any] = []
    common: str | None = None
    for variant in variants:
        if not isinstance(variant, dict):
            return None
        if "const" in variant:
            values.append(variant["const"])
        elif isinstance(variant.get("enum"), list) and len(variant["enum"]) == 1:
            values.append(variant["enum"][0])
        else:
            return None
        kind = variant.get("type")
        if not isinstance(kind, str) or not kind or (common is not None and common != kind):
            return None
        common = kind
    return {"type": common, "enum": values} if common else None


def _simplify_union(obj: Mapping[str, Any], variants: list[Any]) -> tuple[bool, Any]:
    """(simplified?, value): the whole node when it simplifies, else the variants to keep."""
    non_null = [v for v in variants if not _is_null_schema(v)]
    stripped = len(non_null) != len(variants)
    literal = _flatten_literal_union(non_null)
    if literal is not None:
        return True, _copy_meta(obj, literal)
    if stripped and len(non_null) == 1:
        lone = non_null[0]
        return True, _copy_meta(obj, dict(lone)) if isinstance(lone, dict) else lone
    return False, non_null if stripped else variants


def _flatten_union_fallback(obj: Mapping[str, Any], variants: list[Any]) -> dict[str, Any] | None:
    objects = [v for v in variants if isinstance(v, dict)]
    if not objects:
        return None
    types: list[Any] = []
    for v in objects:
        kind = v.get("type")
        if _truthy(kind) and not any(_same(kind, seen) for seen in types):
            types.append(kind)
    first = objects[0]
    kind = types[0] if len(types) == 1 else first.get("type")
    if len(objects) == 1:
        merged: dict[str, Any] = dict(first)
    elif _truthy(kind):
        merged = {"type": kind}
    else:
        merged = {}
    return _copy_meta(obj, merged)


# --------------------------------------------------------------------------- allOf


def _merge_compatible(schemas: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The intersection of ``schemas`` when it needs no ``allOf``; ``None`` on conflict."""
    merged: dict[str, Any] = {}
    required: list[str] = []
    for schema in schemas:
        for key, value in schema.items():
            if key == "allOf":
                continue
            if key in _META_KEYS:
                merged.setdefault(key, value)
                continue
            if key == "required" and isinstance(value, list):
                required.extend(n for n in value if isinstance(n, str) and n not in required)
                continue
            if key == "properties" and isinstance(value, dict):
                properties: dict[str, Any] = merged.setdefault("properties", {})
                for name, prop in value.items():
                    existing = properties.get(name, _MISSING)
                    if existing is _MISSING:
                        properties[name] = prop
                    elif isinstance(existing, dict) and isinstance(prop, dict):
                        both = _merge_compatible([existing, prop])
                        if both is None:
                            return None
                        properties[name] = both
                    elif not _same(existing, prop):
                        return None
                continue
            if key == "enum" and isinstance(value, list):
                if not isinstance(merged.get("enum"), list):
                    merged["enum"] = value
                    continue
                common = [v for v in merged["enum"] if any(_same(v, w) for w in value)]
                if not common:
                    return None
                merged["enum"] = common
                continue
            if key not in merged:
                merged[key] = value
            elif not _same(merged[key], value):
                return None
    if required:
        merged["required"] = required
    return _sanitize_required(merged)


def _merge_widened(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    """Last resort for conflicting parts: an object with every property (conflicts widen)."""
    result: dict[str, Any] = {}
    explicit = [s["type"] for s in schemas if isinstance(s.get("type"), str)]
    common = explicit[0] if explicit and all(t == explicit[0] for t in explicit) else None
    object_like = all(
        "type" not in s or s["type"] == "object" or isinstance(s.get("properties"), dict)
        for s in schemas
    )
    if object_like and any(
        s.get("type") == "object" or _truthy(s.get("properties")) for s in schemas
    ):
        result["type"] = "object"
        properties: dict[str, Any] = {}
        for schema in schemas:
            props = schema.get("properties")
            if not isinstance(props, dict):
                continue
            for name, prop in props.items():
                existing = properties.get(name, _MISSING)
                if existing is _MISSING:
                    properties[name] = prop
                elif isinstance(existing, dict) and isinstance(prop, dict):
                    pair = [existing, prop]
                    properties[name] = _merge_compatible(pair) or _merge_widened(pair)
        required: list[str] = []
        for schema in schemas:
            names = schema.get("required")
            if isinstance(names, list):
                required.extend(
                    n for n in names if isinstance(n, str) and n in properties and n not in required
                )
        result["properties"] = properties
        if required:
            result["required"] = required
    elif common:
        result["type"] = common
    for schema in schemas:
        for key in _META_KEYS:
            if key not in result and key in schema:
                result[key] = schema[key]
    return _sanitize_required(result)


def _flatten_all_of(outer: dict[str, Any], variants: Iterable[Any]) -> dict[str, Any]:
    schemas = [outer, *(v for v in variants if isinstance(v, dict))]
    return _merge_compatible(schemas) or _merge_widened(schemas)


def _remove_surviving_all_of(schema: Any) -> Any:
    if isinstance(schema, list):
        return [_remove_surviving_all_of(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    outer = {k: _remove_surviving_all_of(v) for k, v in schema.items() if k != "allOf"}
    parts = schema.get("allOf")
    if not isinstance(parts, list):
        return outer
    return _flatten_all_of(outer, [_remove_surviving_all_of(part) for part in parts])


class _Missing:
    pass


_MISSING: Any = _Missing()


# --------------------------------------------------------------------------- the walk


def _clean(
    schema: Any, defs: dict[str, Any] | None, ref_stack: frozenset[str], ancestors: set[int]
) -> Any:
    if not isinstance(schema, dict | list):
        return schema
    marker = id(schema)
    if marker in ancestors:
        raise ValueError(_CIRCULAR)
    ancestors.add(marker)
    try:
        if isinstance(schema, list):
            return [_clean(item, defs, ref_stack, ancestors) for item in schema]
        return _clean_object(schema, defs, ref_stack, ancestors)
    finally:
        ancestors.discard(marker)


def _clean_object(
    obj: dict[str, Any], defs: dict[str, Any] | None, ref_stack: frozenset[str], ancestors: set[int]
) -> Any:
    defs = _extend_defs(defs, obj)
    ref = obj.get("$ref")
    if isinstance(ref, str) and ref:
        if ref in ref_stack:
            return {}
        resolved = _resolve_local_ref(ref, defs)
        if _truthy(resolved):
            # a reference starts a fresh raw-descent segment; the ref stack bounds cycles
            cleaned_ref = _clean(resolved, defs, ref_stack | {ref}, set())
            if not isinstance(cleaned_ref, dict):
                return cleaned_ref
            return _copy_meta(obj, dict(cleaned_ref))
        return _copy_meta(obj, {})

    unions: dict[str, list[Any]] = {}
    for key in ("anyOf", "oneOf"):
        variants = obj.get(key)
        if isinstance(variants, list):
            unions[key] = [_clean(v, defs, ref_stack, ancestors) for v in variants]
    for key in ("anyOf", "oneOf"):
        if key in unions:
            simplified, value = _simplify_union(obj, unions[key])
            if simplified:
                return value
            unions[key] = value

    cleaned: dict[str, Any] = {}
    all_of: list[Any] | None = None
    for key, value in obj.items():
        if key == "allOf":
            if isinstance(value, list):
                all_of = [_clean(v, defs, ref_stack, ancestors) for v in value]
            continue
        if key in GEMINI_UNSUPPORTED_SCHEMA_KEYWORDS:
            continue
        if key in ("const", "enum"):
            values = _enum_values([value] if key == "const" else value)
            if values:
                cleaned["enum"] = values
            continue
        if key == "required" and isinstance(value, list) and not value:
            continue
        if key == "type" and unions:
            continue
        if key == "type" and isinstance(value, list) and all(isinstance(t, str) for t in value):
            types = [t for t in value if t != "null"]
            cleaned["type"] = types[0] if len(types) == 1 else types
            continue
        if key == "properties":
            if isinstance(value, dict):
                cleaned[key] = {
                    name: _clean(prop, defs, ref_stack, ancestors) for name, prop in value.items()
                }
            else:
                cleaned[key] = {}  # malformed property maps must not reach Google
        elif key == "items" and isinstance(value, list | dict):
            cleaned[key] = _clean(value, defs, ref_stack, ancestors)
        elif key in unions and isinstance(value, list):
            cleaned[key] = unions[key]
        else:
            cleaned[key] = value

    if all_of is not None:
        return _flatten_all_of(cleaned, all_of)
    for key in ("anyOf", "oneOf"):
        variants = cleaned.get(key)
        if isinstance(variants, list):
            flattened = _flatten_union_fallback(cleaned, variants)
            if flattened is not None:
                return _sanitize_required(flattened)
    return _sanitize_required(cleaned)
