"""A tool's JSON schema as a model needs it: every limit said, nothing generated for people.

Bridges the schemas pydantic derives (the built-in tools') and those MCP servers send to what a
request carries. Generated ``title``s go (``"title": "Path"`` beside a property named ``path``);
``$ref`` to ``$defs``/``definitions`` is replaced by what it points at, so a small model never
has to follow a reference; a ``"default": null`` goes (``required`` already says a field may be
left out). Every limit stays: ``minimum``, ``maximum``, ``maxLength``, ``enum``, ``default``,
``pattern`` and the descriptions. A schema that refers to itself keeps its ``$defs`` for that
reference. ``without_descriptions`` is the compact form of a small window: the limits, not the words.
"""

from __future__ import annotations

import copy
from typing import Any

DEFINITIONS = ("$defs", "definitions")
NAMED_SCHEMAS = ("properties", "patternProperties", *DEFINITIONS)  # keys whose values map names to schemas
VALUES = ("default", "enum", "const", "examples")  # keys whose values are data, kept as they are


def lean_schema(schema: Any) -> Any:
    """``schema`` without generated titles, its references inlined; a new object, the given one untouched."""
    if not isinstance(schema, dict):
        return copy.deepcopy(schema)
    definitions = {f"#/{key}/{name}": value for key in DEFINITIONS for name, value in (schema.get(key) or {}).items()}
    recursive: set[str] = set()
    lean = _lean(schema, definitions, (), recursive)
    if not recursive:
        for key in DEFINITIONS:
            lean.pop(key, None)
    return lean


def _lean(node: Any, definitions: dict[str, Any], following: tuple[str, ...], recursive: set[str]) -> Any:
    if isinstance(node, list):
        return [_lean(item, definitions, following, recursive) for item in node]
    if not isinstance(node, dict):
        return node
    reference = node.get("$ref")
    if isinstance(reference, str) and reference in definitions:
        if reference in following:  # a schema that contains itself: the reference stays
            recursive.add(reference)
            return {key: value for key, value in node.items() if key != "title"}
        inlined = _lean(definitions[reference], definitions, (*following, reference), recursive)
        siblings = {key: value for key, value in node.items() if key not in ("$ref", "title")}
        return {**inlined, **_lean(siblings, definitions, following, recursive)}
    lean: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        if key in NAMED_SCHEMAS and isinstance(value, dict):
            lean[key] = {name: _lean(item, definitions, following, recursive) for name, item in value.items()}
        elif key in VALUES:
            lean[key] = copy.deepcopy(value)
        else:
            lean[key] = _lean(value, definitions, following, recursive)
    return lean


def without_descriptions(schema: Any) -> Any:
    """A lean schema's limits without its words: every ``description`` of a property left out."""
    if isinstance(schema, list):
        return [without_descriptions(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "description" and isinstance(value, str):
            continue
        if key in NAMED_SCHEMAS and isinstance(value, dict):
            kept[key] = {name: without_descriptions(item) for name, item in value.items()}
        elif key in VALUES:
            kept[key] = value
        else:
            kept[key] = without_descriptions(value)
    return kept
