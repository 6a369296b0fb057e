"""Tool-argument validation as pi-ai's ``validateToolArguments`` does it (TypeBox 1.x).

Before checking, arguments are converted the way TypeBox's ``Value.Convert`` converts them
(``"3"`` → ``3`` for a number, ``5`` → ``"5"`` for a string, ``"true"`` → ``true``, a lone value
→ ``[value]`` for an array) and an optional ``null`` is dropped; what still does not fit fails
with Pi's message, which quotes the received arguments as ``JSON.stringify(args, null, 2)``.
The schemas this handles are the ones tools use: objects, arrays, strings, numbers, integers,
booleans; anything else passes unchecked.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from rpcd.tools.errors import ToolError

_NUMERIC = re.compile(
    r"^\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?|0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|Infinity)\s*$"
)


def _js_number(text: str) -> float | None:
    """JavaScript ``+text`` when it is a finite number (TypeBox's ``TryNumber`` from a string)."""
    if text.strip() == "":
        return 0.0
    if not _NUMERIC.match(text):
        return None
    stripped = text.strip()
    try:
        value = float(int(stripped, 0)) if stripped.lower().startswith(("0x", "0b", "0o")) else float(stripped)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _as_number(value: float) -> int | float:
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _convert(value: Any, spec: Mapping[str, Any]) -> Any:
    kind = spec.get("type")
    if kind == "string":
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int | float):
            return js_number_text(value)
        if value is None:
            return "null"
        return value
    if kind in ("number", "integer"):
        if isinstance(value, bool):
            return 1 if value else 0
        if value is None:
            return 0
        if isinstance(value, str):
            parsed = _js_number(value)
            if parsed is not None:
                return _as_number(parsed)
            if value.lower() == "false":
                return 0
            if value.lower() == "true":
                return 1
        return value
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if value is None:
            return False
        if isinstance(value, int | float) and value in (0, 1):
            return value == 1
        if isinstance(value, str):
            lowered = value.lower()
            if lowered == "false" or value == "0":
                return False
            if lowered == "true" or value == "1":
                return True
        return value
    if kind == "array":
        items = value if isinstance(value, list) else [value]
        item_spec = spec.get("items")
        return [_convert(v, item_spec) for v in items] if isinstance(item_spec, Mapping) else items
    if kind == "object" and isinstance(value, dict):
        properties = spec.get("properties")
        if isinstance(properties, Mapping):
            for key, prop in properties.items():
                if key in value and isinstance(prop, Mapping):
                    value[key] = _convert(value[key], prop)
    return value


def _drop_optional_nulls(value: Any, spec: Mapping[str, Any]) -> None:
    if isinstance(value, list):
        items = spec.get("items")
        if isinstance(items, Mapping):
            for item in value:
                _drop_optional_nulls(item, items)
        return
    properties = spec.get("properties")
    if not isinstance(value, dict) or not isinstance(properties, Mapping):
        return
    required = set(spec.get("required") or ())
    for key, prop in properties.items():
        if key not in value:
            continue
        if value[key] is None and key not in required and isinstance(prop, Mapping) and prop.get("type") != "null":
            del value[key]
        elif isinstance(prop, Mapping):
            _drop_optional_nulls(value[key], prop)


def _type_ok(value: Any, kind: Any) -> bool:
    if kind == "string":
        return isinstance(value, str)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if kind == "integer":
        return isinstance(value, int | float) and not isinstance(value, bool) and float(value).is_integer()
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "array":
        return isinstance(value, list)
    if kind == "object":
        return isinstance(value, dict)
    if kind == "null":
        return value is None
    return True


def _errors(value: Any, spec: Mapping[str, Any], path: str, out: list[str]) -> None:
    kind = spec.get("type")
    if kind is not None and not _type_ok(value, kind):
        out.append(f"  - {path or 'root'}: must be {kind}")
        return
    if kind == "object" and isinstance(value, dict):
        required = [name for name in spec.get("required") or () if name not in value]
        if required:
            where = f"{path}.{required[0]}" if path else required[0]
            out.append(f"  - {where}: must have required properties {', '.join(required)}")
        properties = spec.get("properties")
        if isinstance(properties, Mapping):
            for key, prop in properties.items():
                if key in value and isinstance(prop, Mapping):
                    _errors(value[key], prop, f"{path}.{key}" if path else key, out)
    elif kind == "array" and isinstance(value, list):
        items = spec.get("items")
        if isinstance(items, Mapping):
            for index, item in enumerate(value):
                _errors(item, items, f"{path}.{index}" if path else str(index), out)


def js_number_text(value: int | float) -> str:
    """``String(number)`` for the numbers JSON carries."""
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        text = repr(value)
        if "e" in text:
            mantissa, _, exponent = text.partition("e")
            sign = "-" if exponent.startswith("-") else "+"
            return f"{mantissa}e{sign}{exponent.lstrip('+-').lstrip('0') or '0'}"
        return text
    return str(value)


def _js_ready(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return int(value)
    if isinstance(value, dict):
        return {k: _js_ready(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_js_ready(v) for v in value]
    return value


def js_pretty_json(value: Any) -> str:
    """``JSON.stringify(value, null, 2)`` for JSON-shaped values."""
    return json.dumps(_js_ready(value), indent=2, ensure_ascii=False)


def validate_arguments(tool_name: str, parameters: Mapping[str, Any], arguments: Any) -> Any:
    """The arguments the tool runs with, converted as Pi converts them; ``ToolError`` when they do not fit."""
    args = copy.deepcopy(arguments)
    _drop_optional_nulls(args, parameters)
    args = _convert(args, parameters)
    problems: list[str] = []
    _errors(args, parameters, "", problems)
    if not problems:
        return args
    listed = "\n".join(problems)
    raise ToolError(
        f'Validation failed for tool "{tool_name}":\n{listed}\n\nReceived arguments:\n{js_pretty_json(arguments)}'
    )
