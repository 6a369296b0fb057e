"""The one strict cattrs converter for every wire type.

Rules, applied once here (never per class):

* camelCase on the wire (``session_path`` <-> ``sessionPath``);
* unknown keys are errors, except on ``open_object`` classes (capabilities);
* no coercion: ``5`` is not a string, ``True`` is not an integer, ``"1"`` is not a number,
  a string is not a list; the only widening is an integer where a float is expected;
* ``null`` for an optional field means "unset" on input; on output unset optional fields are
  omitted, ``nullable()`` fields are always present;
* a failed conversion raises ``ParamsError`` listing EVERY offending path, not the first one.

Error messages name types and paths only, never the offending value: params may hold
secrets or transcript text, and error data must not.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import attrs
import cattrs
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_structure_fn, override

from rpcd.protocol._fields import camel, is_nullable, is_open

T = TypeVar("T")
_NONE = type(None)
_PRIMITIVES: tuple[type, ...] = (str, int, float, bool)
_JSON_NAMES: dict[type, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    dict: "object",
    list: "array",
    _NONE: "null",
}


def _free_form(tp: Any) -> bool:
    """``dict[str, Any]``, ``list[dict[str, Any]]``, ...: plain JSON containers (``Any`` only inside)."""
    origin = get_origin(tp)
    if origin not in (dict, list):
        return False
    return all(arg is Any or arg in _PRIMITIVES or _free_form(arg) for arg in get_args(tp))


@attrs.frozen
class Problem:
    """One offending location: ``path`` is JSONPath-like (``$.options[2]``), ``message`` says what is wrong."""

    path: str
    message: str


class ParamsError(ValueError):
    """Structuring failed; ``problems`` lists every offending path."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("; ".join(f"{p.message} @ {p.path}" for p in problems))
        self.problems = problems


def json_type_name(value: object) -> str:
    for cls, name in _JSON_NAMES.items():
        if type(value) is cls:
            return name
    return type(value).__name__


def _origin(tp: Any) -> Any:
    return get_origin(tp)


def _is_union(tp: Any) -> bool:
    return _origin(tp) in (Union, types.UnionType)


def _describe(tp: Any) -> str:
    if tp in _JSON_NAMES:
        return _JSON_NAMES[tp]
    if tp is Any:
        return "any value"
    if attrs.has(tp):
        return "object"
    origin = get_origin(tp)
    if origin is Literal:
        return " or ".join(repr(a) for a in get_args(tp))
    if _is_union(tp):
        return " or ".join(_describe(a) for a in get_args(tp))
    if origin in (list, dict):
        return _JSON_NAMES[origin]
    return str(tp)


def _primitive_matches(value: object, cls: type) -> bool:
    if cls is float:
        return type(value) in (int, float)
    return type(value) is cls


def _strict_primitive(cls: type) -> Callable[[Any, Any], Any]:
    def hook(value: Any, _: Any) -> Any:
        if not _primitive_matches(value, cls):
            raise TypeError(f"expected {_describe(cls)}, got {json_type_name(value)}")
        return float(value) if cls is float else value

    return hook


def _literal_hook(tp: Any) -> Callable[[Any, Any], Any]:
    allowed = get_args(tp)

    def hook(value: Any, _: Any) -> Any:
        # ``True == 1``: compare type too, so a boolean never passes for a numeric literal.
        if not any(type(value) is type(a) and value == a for a in allowed):
            raise ValueError(f"expected one of {', '.join(repr(a) for a in allowed)}")
        return value

    return hook


def _any_hook(value: Any, _: Any) -> Any:
    return value


def _literal_values(field_type: Any) -> tuple[Any, ...]:
    return get_args(field_type) if get_origin(field_type) is Literal else ()


def _discriminator(classes: list[type]) -> tuple[str, dict[Any, type]] | None:
    """A field every class pins with a ``Literal`` and whose values tell them apart (``kind``)."""
    first = attrs.fields_dict(classes[0])
    for name in first:
        table: dict[Any, type] = {}
        for cls in classes:
            hints = typing.get_type_hints(cls)
            for value in _literal_values(hints.get(name)):
                if value in table:
                    break
                table[value] = cls
            else:
                continue
            break
        else:
            if table and set(table.values()) == set(classes):
                return camel(name), table
    return None


def _container_matches(value: object, tp: Any) -> bool:
    origin = get_origin(tp) or tp
    if origin is list:
        return type(value) is list
    if origin is dict:
        return type(value) is dict
    if attrs.has(origin):
        return type(value) is dict
    return False


def _with_problems(run: Callable[[], T]) -> T:
    try:
        return run()
    except ParamsError:
        raise
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError) as exc:
        raise ParamsError(problems_of(exc)) from None


def problems_of(exc: BaseException, path: str = "$") -> list[Problem]:
    """Flatten cattrs' nested validation errors into one problem per offending path."""
    if isinstance(exc, ForbiddenExtraKeysError):
        return [Problem(f"{path}.{key}", "unknown field") for key in sorted(exc.extra_fields)]
    if isinstance(exc, ClassValidationError | IterableValidationError):
        found: list[Problem] = []
        for sub in exc.exceptions:
            sub_path = path
            for note in getattr(sub, "__notes__", []):
                name = getattr(note, "name", None)
                index = getattr(note, "index", None)
                if isinstance(name, str):
                    sub_path = f"{path}.{camel(name)}"
                elif index is not None:
                    sub_path = f"{path}[{index}]" if isinstance(index, int) else f"{path}.{index}"
            found.extend(problems_of(sub, sub_path))
        return found
    if isinstance(exc, KeyError):
        return [Problem(path, "required field missing")]
    if isinstance(exc, ParamsError):
        return [Problem(path + p.path[1:], p.message) for p in exc.problems]
    message = str(exc) if isinstance(exc, TypeError | ValueError) else type(exc).__name__
    return [Problem(path, message or "invalid value")]


def make_converter() -> cattrs.Converter:
    """Build the strict converter (the module-level ``CONVERTER`` is the shared instance)."""
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)

    for cls in _PRIMITIVES:
        conv.register_structure_hook(cls, _strict_primitive(cls))
    conv.register_structure_hook(Any, _any_hook)
    conv.register_structure_hook_factory(lambda t: _origin(t) is Literal, _literal_hook)

    def list_factory(tp: Any) -> Callable[[Any, Any], Any]:
        (item_type,) = get_args(tp) or (Any,)

        def hook(value: Any, _: Any) -> Any:
            if type(value) is not list:
                raise TypeError(f"expected array, got {json_type_name(value)}")
            out: list[Any] = []
            errors: list[Exception] = []
            for index, item in enumerate(value):
                try:
                    out.append(conv.structure(item, item_type))
                except Exception as exc:
                    exc.add_note(cattrs.IterableValidationNote(f"index {index}", index, item_type))
                    errors.append(exc)
            if errors:
                raise IterableValidationError("invalid items", errors, tp)
            return out

        return hook

    def dict_factory(tp: Any) -> Callable[[Any, Any], Any]:
        key_type, value_type = get_args(tp) or (str, Any)

        def hook(value: Any, _: Any) -> Any:
            if type(value) is not dict:
                raise TypeError(f"expected object, got {json_type_name(value)}")
            if value_type is Any and key_type is str:
                return value  # free-form Pi payloads pass through untouched (JSON keys are strings)
            out: dict[Any, Any] = {}
            errors: list[Exception] = []
            for key, item in value.items():
                try:
                    out[key] = conv.structure(item, value_type)
                except Exception as exc:
                    exc.add_note(cattrs.IterableValidationNote(f"key {key}", key, value_type))
                    errors.append(exc)
            if errors:
                raise IterableValidationError("invalid values", errors, tp)
            return out

        return hook

    conv.register_structure_hook_factory(lambda t: _origin(t) is list, list_factory)
    conv.register_structure_hook_factory(lambda t: _origin(t) is dict, dict_factory)

    def union_factory(tp: Any) -> Callable[[Any, Any], Any]:
        members = get_args(tp)
        primitives = [m for m in members if m in _PRIMITIVES or m is _NONE]
        literals = [a for m in members if get_origin(m) is Literal for a in get_args(m)]
        classes = [m for m in members if attrs.has(m)]
        containers = [m for m in members if m not in primitives and m not in classes and get_origin(m) is not Literal]
        disc = _discriminator(classes) if len(classes) > 1 else None

        def hook(value: Any, _: Any) -> Any:
            for prim in primitives:
                if _primitive_matches(value, prim):
                    return None if prim is _NONE else conv.structure(value, prim)
            if any(type(value) is type(a) and value == a for a in literals):  # ``Literal[...] | None``
                return value
            if classes and type(value) is dict:
                if len(classes) == 1:
                    return conv.structure(value, classes[0])
                if disc is not None:
                    key, table = disc
                    chosen = table.get(value.get(key))
                    if chosen is None:
                        allowed = ", ".join(repr(v) for v in table)
                        raise ParamsError([Problem(f"$.{key}", f"expected one of {allowed}")])
                    return conv.structure(value, chosen)
            for container in containers:
                if _container_matches(value, container):
                    return conv.structure(value, container)
            raise TypeError(f"expected {_describe(tp)}, got {json_type_name(value)}")

        return hook

    conv.register_structure_hook_factory(_is_union, union_factory)

    def attrs_structure_factory(cls: type[Any]) -> Callable[[Any, Any], Any]:
        overrides = {f.name: override(rename=camel(f.name)) for f in attrs.fields(cls)}
        inner = make_dict_structure_fn(
            cls,
            conv,
            _cattrs_forbid_extra_keys=not is_open(cls),
            _cattrs_detailed_validation=True,
            **overrides,  # type: ignore[arg-type]
        )
        optional = {camel(f.name) for f in attrs.fields(cls) if f.default is None}

        def hook(value: Any, _: Any) -> Any:
            if type(value) is not dict:
                raise TypeError(f"expected object, got {json_type_name(value)}")
            if optional and any(value.get(k, 0) is None for k in optional):
                # null == unset for optional fields: drop it so the default applies.
                value = {k: v for k, v in value.items() if not (v is None and k in optional)}
            return inner(value, cls)

        return hook

    conv.register_structure_hook_factory(attrs.has, attrs_structure_factory)

    def attrs_unstructure_factory(cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
        try:
            hints = typing.get_type_hints(cls)
        except Exception:  # an unresolvable annotation: unstructure every field the general way
            hints = {}
        plan = [
            (f.name, camel(f.name), is_nullable(f), _free_form(hints.get(f.name, Any)))
            for f in attrs.fields(cls)
        ]

        def hook(obj: Any) -> dict[str, Any]:
            out: dict[str, Any] = {}
            for name, key, keep_null, free_form in plan:
                value = getattr(obj, name)
                if value is None:
                    if keep_null:
                        out[key] = None
                    continue
                # A free-form payload (Pi's events, messages, entries) goes out as it is: no copy,
                # and no recursion, so a value nested thousands deep reaches the encoder intact.
                out[key] = value if free_form or type(value) in (str, int, bool) else conv.unstructure(value)
            return out

        return hook

    conv.register_unstructure_hook_factory(attrs.has, attrs_unstructure_factory)
    return conv


CONVERTER = make_converter()


def structure(data: Any, cls: type[T]) -> T:
    """Strictly build ``cls`` from wire JSON; raises ``ParamsError`` listing every offending path."""
    return _with_problems(lambda: CONVERTER.structure(data, cls))


def unstructure(obj: Any) -> Any:
    """attrs instances (and containers of them) to plain JSON values, camelCase, unset fields omitted."""
    return CONVERTER.unstructure(obj)
