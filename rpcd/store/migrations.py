"""Pi's v1 -> v2 -> v3 migrations, mutating parsed entries in place exactly as Pi does.

In-place mutation matters for byte compatibility: a key that already exists keeps its
position, a new key (``version`` on a v1 header, ``id``/``parentId`` on v1 entries,
``firstKeptEntryId``) is appended at the end, just as a JavaScript object behaves. The
migrated file is rewritten whole, which is the one case where we re-serialise lines we
did not create (Pi does the same, and a real Pi must then read our file identically).
"""

from __future__ import annotations

from typing import Any

from rpcd.store import entries as E
from rpcd.store._ids import new_entry_id


def header_version(header: dict[str, Any]) -> int:
    version = header.get("version")
    return version if isinstance(version, int) and not isinstance(version, bool) else 1


def migrate(file_entries: list[dict[str, Any]]) -> bool:
    """Bring ``[header, *entries]`` to version 3; ``True`` if anything was migrated."""
    header = next((e for e in file_entries if e.get("type") == E.SESSION), None)
    version = header_version(header) if header is not None else 1
    if version >= E.CURRENT_SESSION_VERSION:
        return False
    if version < 2:
        _v1_to_v2(file_entries)
    if version < 3:
        _v2_to_v3(file_entries)
    return True


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
