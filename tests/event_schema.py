"""Every session notification a test receives, checked against the published contract.

Two checks per ``session/event`` / ``session/lifecycle`` notification:

* the protocol's own strict converter builds its attrs type (``SessionEventParams`` /
  ``SessionLifecycleParams``: closed event envelopes, typed payloads);
* the JSON Schema the OpenRPC document publishes for it accepts it (``protocol/openrpc.json``,
  read from disk: the checked-in document is what client authors get).

The JSON Schema check is a small validator for exactly the keywords the generator emits
(``$ref``, ``type``, ``properties``, ``required``, ``additionalProperties``, ``items``, ``enum``,
``const``, ``anyOf``, ``oneOf`` with ``discriminator``); an unknown keyword is an error, so a
generator change cannot silently make the check weaker.

The subprocess driver (``tests/driver.py``) records every daemon it starts; the autouse
fixture in ``tests/conftest.py`` runs :func:`problems_in` over their logs after each test.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rpcd.protocol.converter import ParamsError, structure
from rpcd.protocol.types import SessionEventParams, SessionLifecycleParams

DOCUMENT = Path(__file__).resolve().parents[1] / "protocol" / "openrpc.json"
CHECKED: dict[str, type[Any]] = {"session/event": SessionEventParams, "session/lifecycle": SessionLifecycleParams}
_KNOWN = frozenset({
    "$ref", "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
    "oneOf", "discriminator", "description",
})
_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


@functools.cache
def _document() -> dict[str, Any]:
    document: dict[str, Any] = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    return document


def _params_schema(method: str) -> dict[str, Any]:
    for entry in _document()["methods"]:
        if entry["name"] == method:
            schema: dict[str, Any] = entry["x-params-schema"]
            return schema
    raise KeyError(f"{method} is not in the OpenRPC document")


def schema_problems(value: Any, schema: Mapping[str, Any], path: str = "$") -> list[str]:
    """Where ``value`` breaks ``schema`` (JSON Schema subset, ``$ref`` into the document)."""
    unknown = set(schema) - _KNOWN
    if unknown:
        return [f"{path}: schema uses unsupported keywords {sorted(unknown)}"]
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return schema_problems(value, _document()["components"]["schemas"][name], path)
    if "oneOf" in schema:
        return _one_of(value, schema, path)
    if "anyOf" in schema:
        attempts = [schema_problems(value, option, path) for option in schema["anyOf"]]
        return [] if any(not a for a in attempts) else [f"{path}: matches no alternative ({attempts[0][0]})"]
    if "const" in schema and not _same(value, schema["const"]):
        return [f"{path}: expected {schema['const']!r}"]
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        return [f"{path}: expected one of {schema['enum']!r}"]
    kind = schema.get("type")
    if kind is not None and not _TYPES[kind](value):
        return [f"{path}: expected {kind}, got {type(value).__name__}"]
    problems: list[str] = []
    if isinstance(value, dict) and kind == "object":
        properties = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                problems.append(f"{path}.{key}: required")
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                problems.extend(schema_problems(item, properties[key], f"{path}.{key}"))
            elif extra is False:
                problems.append(f"{path}.{key}: not in the schema")
            elif isinstance(extra, Mapping):
                problems.extend(schema_problems(item, extra, f"{path}.{key}"))
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            problems.extend(schema_problems(item, schema["items"], f"{path}[{index}]"))
    return problems


def _one_of(value: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    discriminator = schema.get("discriminator")
    if discriminator is not None and isinstance(value, dict):
        key = discriminator["propertyName"]
        target = discriminator["mapping"].get(value.get(key))
        if target is None:
            return [f"{path}.{key}: {value.get(key)!r} is none of {sorted(discriminator['mapping'])}"]
        return schema_problems(value, {"$ref": target}, path)
    matching = [option for option in schema["oneOf"] if not schema_problems(value, option, path)]
    return [] if len(matching) == 1 else [f"{path}: matches {len(matching)} alternatives of oneOf, not one"]


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def notification_problems(message: Mapping[str, Any]) -> list[str]:
    """Why one notification breaks its contract ([] when it is fine, or not a checked method)."""
    method = message.get("method")
    if method not in CHECKED or "id" in message:
        return []
    params = message.get("params")
    label = f"{method} {params.get('event', {}).get('type') if isinstance(params, dict) else '?'}"
    problems = [f"{label}: {p}" for p in schema_problems(params, _params_schema(str(method)))]
    try:
        structure(params, CHECKED[str(method)])
    except ParamsError as exc:
        problems.extend(f"{label}: {p.path}: {p.message} (converter)" for p in exc.problems)
    return problems


def problems_in(messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """Every contract problem among ``messages`` (each distinct problem once)."""
    found: dict[str, None] = {}
    for message in messages:
        for problem in notification_problems(message):
            found.setdefault(problem)
    return list(found)


def checked_types(messages: Iterable[Mapping[str, Any]]) -> set[str]:
    """The event types among ``messages`` that were checked."""
    found: set[str] = set()
    for message in messages:
        params = message.get("params")
        if message.get("method") in CHECKED and isinstance(params, dict) and isinstance(params.get("event"), dict):
            found.add(str(params["event"]["type"]))
    return found
