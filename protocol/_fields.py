"""Field conventions the converter and the OpenRPC generator both read.

Kept apart from the types so ``types.py`` stays a flat list of shapes and the rules
that give them wire meaning (nullable vs omitted, open vs closed objects) live in one place.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

import attrs

NULLABLE: Final = "rpcd.wire.nullable"
"""Field metadata key: the field is always present on the wire, ``null`` when unset.
Every other optional field is omitted when unset."""

OPEN_ATTR: Final = "__wire_open__"

T = TypeVar("T")


def nullable() -> Any:
    """A field whose ``null`` means something (``leafId`` of an empty session)."""
    return attrs.field(metadata={NULLABLE: True})


def is_nullable(field: attrs.Attribute[Any]) -> bool:
    return bool(field.metadata.get(NULLABLE, False))


def open_object(cls: type[T]) -> type[T]:
    """Mark an attrs class whose unknown keys are ignored instead of refused.

    Only capability objects and ``initialize``'s params are open: a client built against a newer
    protocol (or an LSP client sending ``processId``/``rootUri``) may send fields this daemon does
    not know, and refusing ``initialize`` for that would break the version negotiation that exists
    to handle exactly this case. The params of every other method stay closed.
    """
    setattr(cls, OPEN_ATTR, True)
    return cls


def is_open(cls: type[Any]) -> bool:
    return bool(getattr(cls, OPEN_ATTR, False))


def camel(name: str) -> str:
    """``session_path`` -> ``sessionPath`` (a trailing ``_`` for keywords is dropped)."""
    head, *rest = name.rstrip("_").split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)
