"""Reading a session file the way Pi 0.85.0 reads it, and saying what was skipped.

Pi's rules: split on LF, skip blank lines and lines ``JSON.parse`` rejects (anywhere,
including a torn last line), the first parsed line must be a header with a string id,
migrate old versions. We add what Pi leaves silent: a diagnostic with the count and
line numbers (never the content) of skipped lines.
"""

from __future__ import annotations

import os
from typing import Any

import attrs

from rpcd.errors import NotASessionError
from rpcd.port import Diagnostic
from rpcd.store import codec, migrations
from rpcd.store import entries as E
from rpcd.store.records import Record

_MAX_LISTED_LINES = 20


@attrs.define
class LoadedFile:
    header: dict[str, Any]
    records: list[Record]
    diagnostics: list[Diagnostic]
    missing_final_newline: bool
    migrated: bool


def not_a_session(path: str) -> NotASessionError:
    return NotASessionError(f"Session file is not a valid pi session: {path}", session_path=path)


def parse_bytes(data: bytes, path: str) -> LoadedFile | None:
    """Parse file contents; ``None`` if there is no parsable line at all (empty file).

    Raises ``NotASessionError`` if the first parsed line is not a session header.
    """
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    header: dict[str, Any] | None = None
    parsed: list[tuple[dict[str, Any], bytes]] = []
    blank: list[int] = []
    bad: list[int] = []
    for number, line in enumerate(lines, start=1):
        raw = line.strip(b" \t\r\n")
        if not raw:
            blank.append(number)
            continue
        try:
            value = codec.loads(raw)
        except codec.LineError:
            bad.append(number)
            continue
        if header is None:
            if not (isinstance(value, dict) and value.get("type") == E.SESSION and isinstance(value.get("id"), str)):
                raise not_a_session(path)
            header = value
            continue
        if not isinstance(value, dict):
            bad.append(number)
            continue
        parsed.append((value, raw))
    if header is None:
        if data.strip(b" \t\r\n"):
            raise not_a_session(path)
        return None

    migrated = migrations.migrate([header, *(entry for entry, _ in parsed)])
    records: list[Record] = []
    without_id = 0
    for entry, raw in parsed:
        if entry.get("type") == E.SESSION:
            continue  # a second header (Pi 0.73.1 wrote those); Pi ignores it too
        record = Record.from_parsed(entry, codec.dumps(entry) if migrated else raw)
        if record is None:
            without_id += 1
            continue
        records.append(record)

    diagnostics = _diagnostics(blank, bad, without_id)
    return LoadedFile(
        header=header,
        records=records,
        diagnostics=diagnostics,
        missing_final_newline=not data.endswith(b"\n"),
        migrated=migrated,
    )


def load_file(path: str) -> LoadedFile | None:
    """Read and parse ``path``; ``None`` for an empty file. ``OSError`` propagates."""
    with open(path, "rb") as handle:
        data = handle.read()
    return parse_bytes(data, path)


def read_header(path: str, limit: int = 1 << 20) -> dict[str, Any] | None:
    """The header of ``path`` from at most ``limit`` bytes, or ``None`` if it has none.

    Used where Pi only peeks (``continueRecent``, import checks): no full parse.
    """
    try:
        with open(path, "rb") as handle:
            chunk = handle.read(limit)
    except OSError:
        return None
    for line in chunk.split(b"\n"):
        raw = line.strip(b" \t\r\n")
        if not raw:
            continue
        try:
            value = codec.loads(raw)
        except codec.LineError:
            continue
        if isinstance(value, dict) and value.get("type") == E.SESSION and isinstance(value.get("id"), str):
            return value
        return None
    return None


def _lines(numbers: list[int]) -> str:
    shown = ", ".join(str(n) for n in numbers[:_MAX_LISTED_LINES])
    return shown + (", ..." if len(numbers) > _MAX_LISTED_LINES else "")


def _diagnostics(blank: list[int], bad: list[int], without_id: int) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    if bad:
        message = f"Skipped {len(bad)} unreadable line(s) in session file: line {_lines(bad)}"
        found.append(Diagnostic("warning", message))
    if blank:
        found.append(Diagnostic("info", f"Skipped {len(blank)} blank line(s) in session file: line {_lines(blank)}"))
    if without_id:
        found.append(Diagnostic("warning", f"Skipped {without_id} entry line(s) without an id"))
    return found


def file_size(path: str) -> int:
    return os.stat(path).st_size
