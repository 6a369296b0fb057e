"""Pi's v1 -> v2 -> v3 migrations, mutating parsed entries in place exactly as Pi does.

In-place mutation matters for byte compatibility: a key that already exists keeps its
position, a new key (``version`` on a v1 header, ``id``/``parentId`` on v1 entries,
``firstKeptEntryId``) is appended at the end, just as a JavaScript object behaves. The
migrated file is rewritten whole, which is the one case where we re-serialise lines we
did not create (Pi does the same, and a real Pi must then read our file identically).
"""

from __future__ import annotations

import math
import re
from typing import Any

from rpcd.store import codec
from rpcd.store import entries as E
from rpcd.store._ids import new_entry_id


def header_version(header: dict[str, Any]) -> float:
    """The header's version as Pi compares it: ``header.version ?? 1``, then JavaScript's
    ``ToNumber`` (``3.0`` and ``"3"`` are 3, ``"2"`` is 2, ``true`` is 1, ``"abc"`` is NaN)."""
    version = header.get("version")
    return 1.0 if version is None else js_to_number(version)


def needs_migration(header: dict[str, Any]) -> bool:
    """Pi's ``version >= CURRENT_SESSION_VERSION`` test, negated: also true for a NaN version
    (Pi then runs no step but still rewrites the file)."""
    return not header_version(header) >= E.CURRENT_SESSION_VERSION


def migrate(file_entries: list[dict[str, Any]]) -> bool:
    """Bring ``[header, *entries]`` to version 3; ``True`` if Pi would rewrite the file."""
    header = next((e for e in file_entries if e.get("type") == E.SESSION), None)
    version = header_version(header) if header is not None else 1.0
    if version >= E.CURRENT_SESSION_VERSION:
        return False
    if version < 2:
        _v1_to_v2(file_entries)
    if version < 3:
        _v2_to_v3(file_entries)
    return True


_JS_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)")
_JS_RADIX = re.compile(r"0([xXoObB])([0-9A-Za-z]+)")


def js_to_number(value: Any) -> float:
    """JavaScript's ``ToNumber`` of a parsed JSON value (NaN where JavaScript gives NaN)."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, list):  # ToPrimitive: Array.prototype.join(",")
        return js_to_number(",".join("" if item is None else _js_string(item) for item in value))
    if not isinstance(value, str):
        return math.nan  # "[object Object]"
    text = E.js_trim(value)
    if not text:
        return 0.0
    if _JS_DECIMAL.fullmatch(text):
        return float(text.replace("Infinity", "inf"))
    radix = _JS_RADIX.fullmatch(text)
    if radix:
        base = {"x": 16, "o": 8, "b": 2}[radix.group(1).lower()]
        try:
            return float(int(radix.group(2), base))
        except ValueError:
            return math.nan
    return math.nan


def _js_string(value: Any) -> str:
    """``String(value)`` for what can sit in a parsed JSON array."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return codec.js_number(float(value)).decode()
    if isinstance(value, list):
        return ",".join("" if item is None else _js_string(item) for item in value)
    return "[object Object]"


def _v1_to_v2(file_entries: list[dict[str, Any]]) -> None:
    taken: set[str] = set()
    previous: str | None = None
    for entry in file_entries:
        if entry.get("type") == E.SESSION:
            entry["version"] = 2
            continue
        entry_id = new_entry_id(taken)
        taken.add(entry_id)
        entry["id"] = entry_id
        entry["parentId"] = previous
        previous = entry_id
        if entry.get("type") == E.COMPACTION and "firstKeptEntryIndex" in entry:
            index = entry["firstKeptEntryIndex"]
            if isinstance(index, int) and not isinstance(index, bool):
                target = file_entries[index] if 0 <= index < len(file_entries) else None
                if target is not None and target.get("type") != E.SESSION and target.get("id") is not None:
                    # Pi reads target.id at this moment: a later entry has no id yet (undefined,
                    # which JSON.stringify drops), so only earlier targets are linked.
                    entry["firstKeptEntryId"] = target["id"]
                del entry["firstKeptEntryIndex"]


def _v2_to_v3(file_entries: list[dict[str, Any]]) -> None:
    for entry in file_entries:
        if entry.get("type") == E.SESSION:
            entry["version"] = 3
            continue
        if entry.get("type") == E.MESSAGE:
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
