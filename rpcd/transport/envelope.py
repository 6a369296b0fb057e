"""Classify one frame body as a JSON-RPC 2.0 request, notification, response or invalid message.

Pure code (no I/O, no pygls): the property tests drive it with random bytes. Parsing is
top-level only — nested objects that look like JSON-RPC messages (an imported transcript)
stay plain dicts (pygls' ``object_hook`` would rebuild them, see pitfall P5).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final, NoReturn

import attrs
import orjson

from rpcd.protocol.errors import ErrorCode

RequestId = int | str


@attrs.frozen
class Request:
    id: RequestId
    method: str
    params: Any
    """A dict, a list, or None when absent."""


@attrs.frozen
class Notification:
    method: str
    params: Any


@attrs.frozen
class Response:
    id: RequestId | None
    result: Any = None
    error: dict[str, Any] | None = None


@attrs.frozen
class Invalid:
    """Answer with ``code`` and ``id`` (null unless the object carried a usable id)."""

    id: RequestId | None
    code: ErrorCode
    detail: str


Incoming = Request | Notification | Response | Invalid


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)
"""One decoder for every frame (``json.loads`` with an argument would build a new one per call)."""


_LONG_DIGITS: Final = re.compile(rb"\d{19}")
"""A run of digits that may be an integer beyond 64 bits: orjson would read it as a float."""


def parse_json(body: bytes) -> Any:
    """Strict JSON: UTF-8 only (``json.loads`` would also guess UTF-16/32), no NaN/Infinity.

    Read by orjson (~5x faster: every frame comes here) unless the body may hold an integer orjson
    reads differently (19 digits or more in a row: it gives a float); what orjson refuses is decided by
    the reference decoder below, which also takes JSON orjson does not (lone surrogate escapes, numbers
    beyond a double: ``1e400``) — so the result is always the reference decoder's
    (``tests/transport/test_parse_json.py`` compares them)."""
    if _LONG_DIGITS.search(body) is None:
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
    return _reference_parse(body)


def _read_message(body: bytes) -> Any:
    """``parse_json`` for ``classify``: orjson's reading first; the 19-digit guard only where a number orjson
    reads as a float could change what ``classify`` makes of the message (its ``params``, a response's
    ``result`` or ``error``, a float ``id``). Everything else ``classify`` looks at is a string, or is
    refused alike whatever number it holds, and it ignores other members: a polled request without params
    skips the guard (``tests/transport/test_parse_json.py`` compares the outcome with the reference's)."""
    try:
        raw = _orjson_loads(body)
    except orjson.JSONDecodeError:
        return _reference_parse(body)
    if (type(raw) is dict and (raw.get("params") or "result" in raw or "error" in raw or type(raw.get("id")) is float)
            and _LONG_DIGITS.search(body) is not None):
        return _reference_parse(body)
    return raw


_orjson_loads: Final = orjson.loads


def _reference_parse(body: bytes) -> Any:
    text = body.decode("utf-8")
    if text.startswith("\ufeff"):  # as ``json.loads`` refuses it
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _DECODER.decode(text)


_ID_TYPES: Final = (int, str)
"""The types of a usable id (``bool`` is not one: an exact type check)."""


def classify(body: bytes) -> Incoming:
    try:
        raw = _read_message(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return Invalid(None, ErrorCode.PARSE_ERROR, "invalid JSON or invalid UTF-8")
    if type(raw) is not dict:
        if isinstance(raw, list):
            return Invalid(None, ErrorCode.INVALID_REQUEST,
                           "batch requests are not supported; send one object per frame")
        return Invalid(None, ErrorCode.INVALID_REQUEST, "a message must be a JSON object")
    has_id = "id" in raw
    msg_id = raw.get("id")
    usable = type(msg_id) in _ID_TYPES
    if raw.get("jsonrpc") != "2.0":
        return Invalid(msg_id if usable else None, ErrorCode.INVALID_REQUEST,
                       'missing or wrong "jsonrpc" member (must be "2.0")')
    if msg_id is not None and not usable:
        return Invalid(None, ErrorCode.INVALID_REQUEST, '"id" must be a string, an integer or null')
    usable_id = msg_id if usable else None
    if "method" in raw:
        method = raw["method"]
        if type(method) is not str:
            return Invalid(usable_id, ErrorCode.INVALID_REQUEST, '"method" must be a string')
        params = raw.get("params")
        if params is None:
            if "params" in raw:
                return Invalid(usable_id, ErrorCode.INVALID_REQUEST, '"params" must be an object or an array')
        elif type(params) is not dict and type(params) is not list:
            return Invalid(usable_id, ErrorCode.INVALID_REQUEST, '"params" must be an object or an array')
        if not has_id:
            return Notification(method, params)
        if msg_id is None:
            return Invalid(None, ErrorCode.INVALID_REQUEST, 'a request "id" must not be null')
        return Request(msg_id, method, params)
    if has_id and ("result" in raw) != ("error" in raw):
        error = raw.get("error")
        if "error" in raw and not isinstance(error, dict):
            return Invalid(None, ErrorCode.INVALID_REQUEST, 'a response "error" must be an object')
        return Response(usable_id, raw.get("result"), error)
    return Invalid(None, ErrorCode.INVALID_REQUEST, 'neither a request (no "method") nor a response')
