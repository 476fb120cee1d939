"""``clean_schema_for_gemini``: tables of schemas in, Gemini-acceptable schemas out."""

from __future__ import annotations

import copy

import pytest
from openclaw_runtime_google import GEMINI_UNSUPPORTED_SCHEMA_KEYWORDS, clean_schema_for_gemini

OBJ = "object"

CASES = [
    pytest.param(
        {
            "type": OBJ,
            "properties": {"action": {"type": "string"}},
            "required": ["missing_a", "missing_b"],
        },
        {"type": OBJ, "properties": {"action": {"type": "string"}}},
        id="required-without-matching-properties-is-removed",
    ),
    pytest.param(
        {
            "type": OBJ,
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "required": ["b", "x", 3],
        },
        {
            "type": OBJ,
            "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
            "required": ["b"],
        },
        id="required-keeps-only-declared-names",
    ),
    pytest.param(
        {"type": OBJ, "required": ["a", "b"]},
        {"type": OBJ},
        id="required-without-properties-on-object",
    ),
    pytest.param(
        {"required": ["a"]}, {"required": ["a"]}, id="required-kept-when-not-declared-object"
    ),
    pytest.param(
        {
            "type": OBJ,
            "properties": {"bad": {"type": OBJ, "properties": None}, "good": {"type": "string"}},
        },
        {
            "type": OBJ,
            "properties": {"bad": {"type": OBJ, "properties": {}}, "good": {"type": "string"}},
        },
        id="null-properties-become-empty",
    ),
    pytest.param(
        {
            "type": OBJ,
            "properties": {
                "nested": {
                    "type": OBJ,
                    "properties": {"optional": {"type": "string"}},
                    "required": [],
                }
            },
            "required": ["nested"],
        },
        {
            "type": OBJ,
            "properties": {"nested": {"type": OBJ, "properties": {"optional": {"type": "string"}}}},
            "required": ["nested"],
        },
        id="empty-required-arrays-are-dropped",
    ),
    pytest.param(
        {"type": ["string", "null"], "description": "nullable field"},
        {"type": "string", "description": "nullable field"},
        id="nullable-type-array-collapses",
    ),
    pytest.param(
        {"type": ["string", "integer", "null"]},
        {"type": ["string", "integer"]},
        id="multi-type-array-keeps-non-null",
    ),
    pytest.param(
        {"const": 42, "type": "integer"},
        {"enum": ["42"], "type": "integer"},
        id="integer-const-becomes-string-enum",
    ),
    pytest.param({"const": "fixed"}, {"enum": ["fixed"]}, id="string-const"),
    pytest.param(
        {"const": True, "type": "boolean"},
        {"enum": ["true"], "type": "boolean"},
        id="boolean-const",
    ),
    pytest.param({"const": None}, {}, id="null-const-has-no-enum"),
    pytest.param(
        {"type": "number", "enum": [1, 2.0, 1.5, 2, "2", True]},
        {"type": "number", "enum": ["1", "2", "1.5", "true"]},
        id="enum-values-stringified-and-deduplicated",
    ),
    pytest.param(
        {"type": "integer", "enum": [None, {}, []]},
        {"type": "integer"},
        id="enum-dropped-when-nothing-survives",
    ),
    pytest.param(
        {
            "type": OBJ,
            "properties": {
                "outer": {
                    "type": "array",
                    "items": {
                        "type": OBJ,
                        "properties": {"score": {"type": "number", "enum": [1, 2, 3, 4, 5]}},
                    },
                }
            },
        },
        {
            "type": OBJ,
            "properties": {
                "outer": {
                    "type": "array",
                    "items": {
                        "type": OBJ,
                        "properties": {
                            "score": {"type": "number", "enum": ["1", "2", "3", "4", "5"]}
                        },
                    },
                }
            },
        },
        id="nested-numeric-enums",
    ),
    pytest.param(
        {
            "type": "array",
            "items": [{"type": "string", "minLength": 1}, {"type": "integer", "maximum": 3}],
        },
        {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
        id="tuple-items-cleaned",
    ),
    pytest.param(
        {
            "type": OBJ,
            "$defs": {"Filter/value~": {"type": OBJ, "properties": {"limit": {"type": "number"}}}},
            "properties": {"filter": {"$ref": "#%2F%24defs%2FFilter%7E1value%7E0"}},
        },
        {
            "type": OBJ,
            "properties": {"filter": {"type": OBJ, "properties": {"limit": {"type": "number"}}}},
        },
        id="percent-encoded-local-ref",
    ),
    pytest.param(
        {
            "type": OBJ,
            "$defs": {"Node": {"type": OBJ, "properties": {"next": {"$ref": "#/$defs/Node"}}}},
            "properties": {"head": {"type": OBJ, "properties": {"next": {"$ref": "#/$defs/Node"}}}},
            "required": ["head"],
        },
        {
            "type": OBJ,
            "properties": {
                "head": {
                    "type": OBJ,
                    "properties": {"next": {"type": OBJ, "properties": {"next": {}}}},
                }
            },
            "required": ["head"],
        },
        id="recursive-ref-ends-in-empty-schema",
    ),
    pytest.param(
        {
            "definitions": {
                "Color": {"type": "string", "enum": ["red", "blue"], "description": "inner"}
            },
            "type": OBJ,
            "properties": {"c": {"$ref": "#/definitions/Color", "description": "outer"}},
        },
        {
            "type": OBJ,
            "properties": {
                "c": {"type": "string", "enum": ["red", "blue"], "description": "outer"}
            },
        },
        id="legacy-definitions-ref-keeps-referrer-description",
    ),
    pytest.param(
        {
            "type": OBJ,
            "properties": {"x": {"$ref": "#/$defs/Missing", "title": "X", "type": "string"}},
        },
        {"type": OBJ, "properties": {"x": {"title": "X"}}},
        id="unresolvable-ref-keeps-only-meta",
    ),
    pytest.param(
        {"type": OBJ, "properties": {"x": {"$ref": "https://example.com/schema.json"}}},
        {"type": OBJ, "properties": {"x": {}}},
        id="remote-ref-is-dropped",
    ),
    pytest.param(
        {
            "$defs": {
                "A": {"type": OBJ, "properties": {"b": {"$ref": "#/$defs/B"}}},
                "B": {"type": OBJ, "properties": {"a": {"$ref": "#/$defs/A"}}},
            },
            "$ref": "#/$defs/A",
        },
        {"type": OBJ, "properties": {"b": {"type": OBJ, "properties": {"a": {}}}}},
        id="mutual-ref-cycle",
    ),
    pytest.param(
        {
            "anyOf": [{"type": "string"}, {"type": "null"}],
            "description": "maybe text",
            "default": None,
        },
        {"type": "string", "description": "maybe text", "default": None},
        id="optional-union-becomes-the-lone-variant",
    ),
    pytest.param(
        {
            "oneOf": [{"const": "a", "type": "string"}, {"const": "b", "type": "string"}],
            "title": "Mode",
        },
        {"type": "string", "enum": ["a", "b"], "title": "Mode"},
        id="literal-union-becomes-enum",
    ),
    pytest.param(
        {
            "anyOf": [
                {"enum": ["x"], "type": "string"},
                {"enum": ["y"], "type": "string"},
                {"type": "null"},
            ]
        },
        {"type": "string", "enum": ["x", "y"]},
        id="single-value-enums-with-null-become-enum",
    ),
    pytest.param(
        {
            "anyOf": [{"type": "string", "maxLength": 3}, {"type": "string", "format": "date"}],
            "description": "d",
        },
        {"type": "string", "description": "d"},
        id="same-type-union-falls-back-to-the-type",
    ),
    pytest.param(
        {"type": "string", "anyOf": [{"type": "integer"}, {"type": "string"}]},
        {"type": "integer"},
        id="mixed-union-falls-back-to-the-first-type",
    ),
    pytest.param(
        {
            "anyOf": [
                {"type": OBJ, "properties": {"a": {"type": "string"}}, "required": ["a", "zz"]},
                {"type": "null"},
                {"type": "null"},
            ]
        },
        {"type": OBJ, "properties": {"a": {"type": "string"}}, "required": ["a"]},
        id="object-or-null",
    ),
    pytest.param(
        {"oneOf": [{"description": "no type"}, {"description": "still none"}], "title": "T"},
        {"title": "T"},
        id="untyped-union-keeps-meta-only",
    ),
    pytest.param(
        {
            "allOf": [
                {"type": OBJ, "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"type": OBJ, "properties": {"b": {"type": "integer"}}, "required": ["b"]},
            ],
            "description": "both",
        },
        {
            "description": "both",
            "type": OBJ,
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
        id="compatible-all-of-merges",
    ),
    pytest.param(
        {"allOf": [{"type": "string", "enum": ["a", "b", "c"]}, {"enum": ["b", "c", "d"]}]},
        {"type": "string", "enum": ["b", "c"]},
        id="all-of-intersects-enums",
    ),
    pytest.param(
        {
            "allOf": [
                {"type": OBJ, "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {
                    "type": OBJ,
                    "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                    "required": ["b", "c"],
                },
            ]
        },
        {"type": OBJ, "properties": {"a": {}, "b": {"type": "string"}}, "required": ["a", "b"]},
        id="conflicting-all-of-widens-to-an-object",
    ),
    pytest.param(
        {"allOf": [{"type": "string"}, {"type": "integer"}], "title": "?"},
        {"title": "?"},
        id="conflicting-scalar-all-of-keeps-meta",
    ),
    pytest.param(
        {
            "type": OBJ,
            "properties": {
                "p": {"not": {"type": "null"}, "type": "string", "pattern": "^a", "format": "uri"}
            },
        },
        {"type": OBJ, "properties": {"p": {"type": "string"}}},
        id="not-pattern-format-dropped",
    ),
    pytest.param(
        {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": "urn:x",
            "type": OBJ,
            "additionalProperties": False,
            "patternProperties": {"^x": {"type": "string"}},
            "properties": {
                "n": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 9,
                    "multipleOf": 3,
                    "examples": [3],
                }
            },
            "minProperties": 1,
            "maxProperties": 3,
        },
        {"type": OBJ, "properties": {"n": {"type": "integer"}}},
        id="meta-and-constraint-keywords-dropped",
    ),
    pytest.param(
        {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": 4,
            "uniqueItems": True,
        },
        {"type": "array", "items": {"type": "string"}},
        id="array-constraints-dropped",
    ),
    pytest.param(
        {"type": OBJ, "properties": {"x": {"type": "string", "nullable": True, "~optional": True}}},
        {"type": OBJ, "properties": {"x": {"type": "string", "nullable": True}}},
        id="nullable-kept-optional-marker-dropped",
    ),
]


@pytest.mark.parametrize(("schema", "expected"), CASES)
def test_clean_schema_for_gemini(schema, expected):
    original = copy.deepcopy(schema)
    assert clean_schema_for_gemini(schema) == expected
    assert schema == original  # never mutated


@pytest.mark.parametrize("keyword", sorted(GEMINI_UNSUPPORTED_SCHEMA_KEYWORDS - {"$ref"}))
def test_every_unsupported_keyword_is_removed_at_any_depth(keyword):
    schema = {
        "type": OBJ,
        keyword: {"type": "string"},
        "properties": {"deep": {"type": "string", keyword: 1}},
    }
    assert clean_schema_for_gemini(schema) == {
        "type": OBJ,
        "properties": {"deep": {"type": "string"}},
    }


def test_the_keyword_list_matches_openclaw():
    assert {
        "~optional", "patternProperties", "additionalProperties", "$schema", "$id", "$ref", "$defs",
        "definitions", "examples", "minLength", "maxLength", "minimum", "maximum", "multipleOf",
        "pattern", "format", "minItems", "maxItems", "uniqueItems", "minProperties",
        "maxProperties", "not",
    } == GEMINI_UNSUPPORTED_SCHEMA_KEYWORDS  # fmt: skip


@pytest.mark.parametrize(
    "value", [None, "string", 3, True, [], [{"type": "string", "minLength": 2}]]
)
def test_non_object_inputs(value):
    expected = [{"type": "string"}] if value and isinstance(value, list) else value
    assert clean_schema_for_gemini(value) == expected


def test_a_python_object_cycle_is_a_clear_error():
    schema: dict = {"type": OBJ, "properties": {}}
    schema["properties"]["self"] = schema
    with pytest.raises(ValueError, match="circular reference"):
        clean_schema_for_gemini(schema)


def test_a_shared_subschema_is_not_a_cycle():
    shared = {"type": "string", "minLength": 1}
    schema = {"type": OBJ, "properties": {"a": shared, "b": shared}}
    assert clean_schema_for_gemini(schema) == {
        "type": OBJ,
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
    }


def test_pydantic_generated_schema_is_cleaned():
    """What ``@tool`` builds from ``def f(city: str, unit: Literal["c", "f"] | None = None)``."""
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {
                "anyOf": [{"enum": ["c", "f"], "type": "string"}, {"type": "null"}],
                "default": None,
            },
        },
        "required": ["city"],
        "additionalProperties": False,
    }
    assert clean_schema_for_gemini(schema) == {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "unit": {"enum": ["c", "f"], "type": "string", "default": None},
        },
        "required": ["city"],
    }
