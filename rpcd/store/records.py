"""One entry of a session as held in memory: its tree skeleton, its parsed body, its bytes.

The skeleton (``id``, ``parent_id``, ``type``) is all the tree needs. The original line
bytes are kept so that a line we did not create is never re-serialised (unknown fields,
number formatting and escapes of a newer Pi survive byte-for-byte when we copy it).
"""

from __future__ import annotations

from typing import Any, Final, TypeAlias

from rpcd.store import codec

EntryKey: TypeAlias = Any
"""An entry's id as a key: the string for every entry Pi writes. For hand-edited files, as Pi's
``Map`` keys them: a number stays a number (``5`` and ``"5"`` differ), ``null`` is ``None``, a
missing id is ``UNDEFINED``, ``true``/``false`` and objects get keys of their own."""


class _Undefined:
    """JavaScript's ``undefined`` as a key: the id of an entry that has none."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED: Final = _Undefined()


class _Literal:
    """A key that stands for a JSON value that cannot be a dict key as is (true/false, an object)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return f"key({self.value!r})"


_SAME: Final = object()
_TRUE: Final = _Literal(True)
_FALSE: Final = _Literal(False)


def key_of(value: Any) -> EntryKey:
    """The key of a parsed ``id`` value (``UNDEFINED`` is passed for a missing one)."""
    if value is None or value is UNDEFINED or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return _TRUE if value else _FALSE
    if isinstance(value, int | float):
        return value  # 5 and 5.0 are one key, as in JavaScript
    return _Literal(value)  # an object or array: only ever found by the very same reference


def parent_key_of(value: Any) -> EntryKey | None:
    """The key a root->leaf walk follows: Pi only follows a truthy ``parentId``."""
    return key_of(value) if key_is_truthy(value) else None


def key_is_truthy(key: Any) -> bool:
    """JavaScript truthiness of an id (or its key): undefined, null, "", 0 and false are not."""
    if key is None or key is UNDEFINED or key is _FALSE or key is False or key == "":
        return False
    if isinstance(key, int | float) and not isinstance(key, bool):
        return key == key and key != 0
    return True


def json_of_key(key: EntryKey) -> Any:
    """The JSON value a key stands for (``UNDEFINED`` stays ``UNDEFINED``: the caller omits it)."""
    return key.value if isinstance(key, _Literal) else key


def with_json_parent(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` whose ``parentId`` holds a JSON value, as Pi writes ``parentId: this.leafId``:
    a key standing for a literal becomes that literal, ``UNDEFINED`` drops the key."""
    parent = entry.get("parentId")
    if parent is UNDEFINED:
        return {k: v for k, v in entry.items() if k != "parentId"}
    if isinstance(parent, _Literal):
        return {**entry, "parentId": parent.value}
    return entry


class Record:
    """One entry. Its bytes are a span of a buffer: a loaded line stays inside the buffer the
    file was read into (no per-line copy on resume), an entry we create owns its own bytes."""

    __slots__ = ("_buf", "_end", "_entry", "_start", "id", "parent_id", "role", "tree_parent", "type")

    def __init__(
        self,
        entry_id: EntryKey,
        parent_id: EntryKey | None,
        kind: str,
        role: str | None,
        raw: bytes,
        entry: dict[str, Any] | None,
        start: int = 0,
        end: int = -1,
        tree_parent: Any = _SAME,
    ) -> None:
        """``raw[start:end]`` is the line (``end=-1``: to the end of ``raw``), without its newline.

        ``parent_id`` is what a root->leaf walk follows (``None`` for a falsy ``parentId``);
        ``tree_parent`` is the ``parentId`` as Pi's ``getTree``/``getChildren`` compare it
        (``None`` for ``null``, ``UNDEFINED`` when missing); it defaults to ``parent_id``.
        """
        self.id = entry_id
        self.parent_id = parent_id
        self.tree_parent: EntryKey | None = parent_id if tree_parent is _SAME else tree_parent
        self.type = kind
        self.role = role
        self._buf = raw
        self._start = start
        self._end = len(raw) if end < 0 else end
        self._entry = entry

    @classmethod
    def from_entry(cls, entry: dict[str, Any]) -> Record:
        """A record for an entry we create (or copy with changes): serialised once, now, for the file.

        ``parentId`` may hold the leaf's key (``self._leaf_id``); it is written as Pi writes it.
        """
        entry = with_json_parent(entry)
        record = cls.from_parsed(entry, codec.dumps(entry))
        return record

    @classmethod
    def from_parsed(cls, entry: dict[str, Any], raw: bytes) -> Record:
        """A record for a loaded line. Every object line is an entry, as in Pi: one without an
        id (or with a number for an id) is keyed as Pi's ``Map`` keys it (see ``EntryKey``)."""
        kind = entry.get("type")
        has_parent = "parentId" in entry
        return cls(
            key_of(entry["id"]) if "id" in entry else UNDEFINED,
            parent_key_of(entry.get("parentId")),
            kind if isinstance(kind, str) else "",
            _role_of(entry),
            raw,
            entry,
            tree_parent=key_of(entry["parentId"]) if has_parent else UNDEFINED,
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
