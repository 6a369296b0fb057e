"""Generate the OpenRPC document from the method table: ``python -m rpcd.protocol.openrpc [--write|--check]``.

The checked-in ``protocol/openrpc.json`` is a build product; ``--check`` regenerates it in
memory and exits 1 if the file differs, so CI catches a type change without a document change.
Without flags the document is printed to stdout.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import itertools
import json
import sys
import textwrap
import typing
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

import attrs

from rpcd.protocol._fields import camel, is_nullable, is_open
from rpcd.protocol.converter import _discriminator, _is_union
from rpcd.protocol.errors import DEFAULT_MESSAGES, WHEN, ErrorCode, ErrorData
from rpcd.protocol.methods import METHODS, MethodSpec
from rpcd.protocol.types import PROTOCOL_VERSION, EmptyParams

DOCUMENT = Path(__file__).with_name("openrpc.json")
_NONE = type(None)
_SCALARS: dict[Any, dict[str, Any]] = {
    str: {"type": "string"},
    int: {"type": "integer"},
    float: {"type": "number"},
    bool: {"type": "boolean"},
    _NONE: {"type": "null"},
    Any: {},
}


class NameClash(TypeError):
    """Two different classes would publish one schema name: the document could only describe one."""


class _Schemas:
    """Collects one named schema per attrs class, referenced by ``$ref``; two different classes of one
    name are refused (``NameClash``), never one silently published for both."""

    def __init__(self) -> None:
        self.components: dict[str, dict[str, Any]] = {}
        self._classes: dict[str, type[Any]] = {}

    def of(self, tp: Any) -> dict[str, Any]:
        if tp in _SCALARS:
            return dict(_SCALARS[tp])
        if attrs.has(tp):
            self._define(tp)
            return {"$ref": f"#/components/schemas/{tp.__name__}"}
        origin = get_origin(tp)
        if origin is Literal:
            values = list(get_args(tp))
            return {"const": values[0]} if len(values) == 1 else {"enum": values}
        if _is_union(tp):
            members = get_args(tp)
            found = _discriminator(list(members)) if len(members) > 1 and all(attrs.has(a) for a in members) else None
            if found is None:
                return {"anyOf": [self.of(a) for a in members]}
            key, table = found
            refs = [self.of(a) for a in members]
            mapping = {str(value): f"#/components/schemas/{cls.__name__}" for value, cls in table.items()}
            return {"oneOf": refs, "discriminator": {"propertyName": key, "mapping": mapping}}
        if origin is list:
            return {"type": "array", "items": self.of(get_args(tp)[0])}
        if origin is dict:
            return {"type": "object", "additionalProperties": self.of(get_args(tp)[1])}
        raise TypeError(f"no schema for {tp!r}")

    def _define(self, cls: type[Any]) -> None:
        known = self._classes.setdefault(cls.__name__, cls)
        if known is not cls:
            raise NameClash(f"two classes are named {cls.__name__}: {known.__module__}.{known.__qualname__} and "
                            f"{cls.__module__}.{cls.__qualname__}; the schema name must say which")
        if cls.__name__ in self.components:
            return
        self.components[cls.__name__] = {}  # placeholder: breaks recursion
        hints = typing.get_type_hints(cls)
        docs = _field_docs(cls)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for field in attrs.fields(cls):
            tp = hints[field.name]
            optional = field.default is None and not is_nullable(field)
            if optional and _is_union(tp):
                rest = [a for a in get_args(tp) if a is not _NONE]
                tp = rest[0] if len(rest) == 1 else typing.Union[tuple(rest)]  # noqa: UP007
            schema = self.of(tp)
            if field.name in docs:
                schema["description"] = docs[field.name]
            properties[camel(field.name)] = schema
            if field.default is attrs.NOTHING or is_nullable(field):
                required.append(camel(field.name))
        shape: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            shape["required"] = required
        shape["additionalProperties"] = is_open(cls)
        if cls.__doc__ and not cls.__doc__.startswith(f"{cls.__name__}("):
            shape["description"] = " ".join(cls.__doc__.split()).replace("``", "`")
        self.components[cls.__name__] = shape


def _field_docs(cls: type[Any]) -> dict[str, str]:
    """The attribute docstrings of an attrs class (the string literal under a field), one line each."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    except (OSError, TypeError, SyntaxError):
        return {}
    node = tree.body[0]
    if not isinstance(node, ast.ClassDef):
        return {}
    docs: dict[str, str] = {}
    body = node.body
    for current, following in itertools.pairwise(body):
        if (
            isinstance(current, ast.AnnAssign)
            and isinstance(current.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[current.target.id] = " ".join(following.value.value.split()).replace("``", "`")
    return docs


def _method(spec: MethodSpec, schemas: _Schemas) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": spec.name, "summary": spec.summary, "paramStructure": "by-name"}
    if spec.params is None or spec.params is EmptyParams:
        entry["params"] = []
    else:
        # by-name: each OpenRPC param is one key of the params object.
        ref = schemas.of(spec.params)
        shape = schemas.components[spec.params.__name__]
        required = set(shape.get("required", []))
        entry["params"] = [
            {"name": key, "required": key in required, "schema": schema} for key, schema in shape["properties"].items()
        ]
        entry["x-params-schema"] = ref
    if spec.kind == "request":
        result_schema = {"type": "null"} if spec.result is None else schemas.of(spec.result)
        entry["result"] = {"name": "result", "schema": result_schema}
    if spec.errors:
        entry["errors"] = [{"$ref": f"#/components/errors/{code.name}"} for code in spec.errors]
    entry["x-kind"] = spec.kind
    entry["x-direction"] = spec.direction
    return entry


def build_document() -> dict[str, Any]:
    schemas = _Schemas()
    methods = [_method(spec, schemas) for spec in METHODS.values()]
    schemas.of(ErrorData)
    data_ref = {"$ref": "#/components/schemas/ErrorData"}
    errors = {
        code.name: {"code": int(code), "message": DEFAULT_MESSAGES[code], "data": data_ref} for code in ErrorCode
    }
    for code in ErrorCode:
        errors[code.name]["x-when"] = WHEN[code].replace("``", "`")
    return {
        "openrpc": "1.3.2",
        "info": {
            "title": "rpcd",
            "version": str(PROTOCOL_VERSION),
            "description": "GENERATED by `python -m rpcd.protocol.openrpc --write` from protocol/ -- DO NOT EDIT. "
            "JSON-RPC 2.0 over stdio (NDJSON or Content-Length, auto-detected). x-kind/x-direction say "
            "whether an entry is a request or a notification and who sends it.",
        },
        "methods": methods,
        "components": {"schemas": dict(sorted(schemas.components.items())), "errors": errors},
    }


def render() -> str:
    return json.dumps(build_document(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rpcd.protocol.openrpc", description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"write {DOCUMENT.name}")
    mode.add_argument("--check", action="store_true", help=f"exit 1 if {DOCUMENT.name} is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.write:
        DOCUMENT.write_text(text, encoding="utf-8")
        return 0
    if args.check:
        current = DOCUMENT.read_text(encoding="utf-8") if DOCUMENT.exists() else ""
        if current != text:
            print(f"{DOCUMENT} is stale: run `python -m rpcd.protocol.openrpc --write`", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
