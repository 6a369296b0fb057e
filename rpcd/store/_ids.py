"""Identifiers and timestamps in exactly the shapes Pi writes.

Pi names files after the header timestamp and id, and other tools (and Pi itself) parse
those names, so the formats here are part of the on-disk contract, not a style choice.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Container
from datetime import UTC, datetime, timedelta
from typing import Final

from rpcd.core.errors import StoreError

_SESSION_ID_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$")


def uuid7() -> str:
    """A UUIDv7 string (48-bit ms timestamp, then random bits), as Pi's session ids are.

    Time-ordered ids keep a directory listing roughly chronological.
    """
    ms = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76  # version 7
    value |= ((rand >> 62) & 0xFFF) << 64  # 12 bits rand_a
    value |= 0b10 << 62  # RFC 4122 variant
    value |= rand & ((1 << 62) - 1)
    return str(uuid.UUID(int=value))


def new_entry_id(taken: Container[str]) -> str:
    """8 hex chars like Pi's ``randomUUID().slice(0, 8)``, retried against ``taken``."""
    for _ in range(100):
        candidate = os.urandom(4).hex()  # uuid4's first 8 hex digits are 32 random bits: these, without the UUID
        if candidate not in taken:
            return candidate
    return str(uuid.uuid4())


def validate_session_id(session_id: str) -> str:
    if not _SESSION_ID_RE.match(session_id):
        raise StoreError(
            "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
            "and start and end with an alphanumeric character"
        )
    return session_id


def iso_now() -> str:
    """``new Date().toISOString()``: UTC, millisecond precision, ``Z`` suffix (``format_iso`` of now,
    without a ``datetime``: every appended entry asks for one, on the way to the run's last events)."""
    seconds, millis = divmod(time.time_ns() // 1_000_000, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(seconds)) + f"{millis:03d}Z"


def format_iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_iso(text: object) -> datetime | None:
    """Lenient ``new Date(text)`` for the ISO shapes Pi writes; ``None`` where JS gives NaN."""
    if not isinstance(text, str) or not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value


def file_timestamp(iso: str) -> str:
    """Header timestamp as used in file names: every ``:`` and ``.`` replaced by ``-``."""
    return iso.replace(":", "-").replace(".", "-")


_MAX_TIME_MS = 8.64e15
"""ECMAScript's TimeClip bound: dates beyond +-100,000,000 days are Invalid Date."""


def js_date_ms(value: object) -> int | None:
    """``new Date(value).getTime()`` for a parsed JSON value; ``None`` where JavaScript gives NaN.

    A number is a time value (``1700000000000`` stays itself), ``null``/``false`` is 0, ``true``
    1, a string is parsed (the ISO shapes; JavaScript's legacy formats are not), an array by
    its joined text, an object never.
    """
    if value is None or isinstance(value, bool):
        return int(bool(value))
    if isinstance(value, int | float):
        if value != value or abs(value) > _MAX_TIME_MS:
            return None
        return int(value)  # ToIntegerOrInfinity truncates toward zero
    if isinstance(value, list):
        value = ",".join("" if item is None else str(item) for item in value)
    moment = parse_iso(value)
    if moment is None:
        return None
    return (moment - _EPOCH) // timedelta(milliseconds=1)  # exact: no float rounding of the milliseconds


_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
