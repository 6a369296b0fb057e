"""One entry of a session as held in memory: its tree skeleton, its parsed body, its bytes.

The skeleton (``id``, ``parent_id``, ``type``) is all the tree needs. The original line
bytes are kept so that a line we did not create is never re-serialised (unknown fields,
number formatting and escapes of a newer Pi survive byte-for-byte when we copy it).
"""

from __future__ import annotations

from typing import Any

from rpcd.store import codec


class Record:
    """One entry. Its bytes are a span of a buffer: a loaded line stays inside the buffer the
    file was read into (no per-line copy on resume), an entry we create owns its own bytes."""

    __slots__ = ("_buf", "_end", "_entry", "_start", "id", "parent_id", "role", "type")

    def __init__(
        self,
        entry_id: str,
        parent_id: str | None,
        kind: str,
        role: str | None,
        raw: bytes,
        entry: dict[str, Any] | None,
        start: int = 0,
        end: int = -1,
    ) -> None:
        """``raw[start:end]`` is the line (``end=-1``: to the end of ``raw``), without its newline."""
        self.id = entry_id
        self.parent_id = parent_id
        self.type = kind
        self.role = role
        self._buf = raw
        self._start = start
        self._end = len(raw) if end < 0 else end
        self._entry = entry

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> Record:
        """A record for an entry we create: serialised once, now, for the file."""
        return cls(entry["id"], entry.get("parentId"), entry["type"], _role_of(entry), codec.dumps(entry), entry)

    @classmethod
    def from_parsed(cls, entry: dict[str, Any], raw: bytes) -> Record | None:
        """A record for a loaded line; ``None`` if the entry has no usable id."""
        entry_id = entry.get("id")
        if not isinstance(entry_id, str):
            return None
        parent = entry.get("parentId")
        kind = entry.get("type")
        return cls(
            entry_id,
            parent if isinstance(parent, str) else None,
            kind if isinstance(kind, str) else "",
            _role_of(entry),
            raw,
            entry,
        )

    @property
    def raw(self) -> bytes:
        """The line's bytes as read (or as we wrote them), without the newline."""
        buf = self._buf
        if self._start == 0 and self._end == len(buf):
            return buf
        return buf[self._start : self._end]

    @property
    def parsed(self) -> bool:
        return self._entry is not None

    @property
    def entry(self) -> dict[str, Any]:
        """The entry in Pi's shape (parsed on first use). Read-only by convention.

        Raises ``CorruptRecordError`` if a line accepted on its skeleton alone turns out not
        to be JSON; the session manager then drops it, as Pi drops unparsable lines.
        """
        if self._entry is None:
            try:
                value = codec.loads(memoryview(self._buf)[self._start : self._end])
            except codec.LineError:
                raise CorruptRecordError(self) from None
            if not isinstance(value, dict):
                raise CorruptRecordError(self)
            self._entry = value
        return self._entry


class CorruptRecordError(codec.LineError):
    """A lazily parsed line was not valid JSON after all."""

    def __init__(self, record: Record) -> None:
        super().__init__("unparsable session line")
        self.record = record


def _role_of(entry: dict[str, Any]) -> str | None:
    if entry.get("type") != "message":
        return None
    message = entry.get("message")
    if isinstance(message, dict):
        role = message.get("role")
        return role if isinstance(role, str) else None
    return None
