"""Reading a session file the way Pi 0.85.0 reads it, and saying what was skipped.

Pi's rules: split on LF, skip blank lines and lines ``JSON.parse`` rejects (anywhere,
including a torn last line), the first parsed line must be a header with a string id,
migrate old versions. We add what Pi leaves silent: a diagnostic with the count and
line numbers (never the content) of skipped lines.
"""

from __future__ import annotations

import os
import re
from typing import Any

import attrs

from rpcd.errors import NotASessionError
from rpcd.port import Diagnostic
from rpcd.store import codec, migrations
from rpcd.store import entries as E
from rpcd.store.records import Record

_MAX_LISTED_LINES = 20
_WHITESPACE = b" \t\r\n"

# The fixed prefix JSON.stringify gives every entry Pi writes with the base keys first.
# A line that starts like this and ends in "}" is accepted on its skeleton; its body is
# parsed when first needed (see docs/store.md, "Lazy parsing").
_SKELETON = re.compile(
    rb'\{"type":"([A-Za-z0-9_]+)","id":"([^"\\]+)","parentId":(?:null|"([^"\\]*)"),"timestamp":"[^"\\]*"'
    rb'(?:,"message":\{"role":"([A-Za-z0-9_]+)")?'
)
_EAGER_TYPES = frozenset({E.LABEL, E.SESSION})


@attrs.define
class LoadedFile:
    header: dict[str, Any]
    records: list[Record]
    diagnostics: list[Diagnostic]
    missing_final_newline: bool
    migrated: bool


def not_a_session(path: str) -> NotASessionError:
    return NotASessionError(f"Session file is not a valid pi session: {path}", session_path=path)


def parse_bytes(data: bytes, path: str, *, lazy: bool = True) -> LoadedFile | None:
    """Parse file contents; ``None`` if there is no parsable line at all (empty file).

    Raises ``NotASessionError`` if the first parsed line is not a session header. With
    ``lazy``, lines in Pi's own shape are indexed from their skeleton and parsed later;
    the last line (where a torn write would be) is always parsed in full.
    """
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    last = len(lines)
    while last > 0 and not lines[last - 1].strip(_WHITESPACE):
        last -= 1
    header: dict[str, Any] | None = None
    records: list[Record] = []
    parsed: list[tuple[dict[str, Any], bytes]] = []
    blank: list[int] = []
    bad: list[int] = []
    without_id = 0
    skeleton = _SKELETON.match
    for number, line in enumerate(lines, start=1):
        raw = line
        if raw[:1] in _WHITESPACE or raw[-1:] in _WHITESPACE:
            raw = raw.strip(_WHITESPACE)
            if not raw:
                blank.append(number)
                continue
        if header is not None and lazy and number < last and raw[-1:] == b"}":
            match = skeleton(raw)
            if match is not None:
                kind, role = match.group(1).decode(), match.group(4)
                if kind not in _EAGER_TYPES and (role is not None or kind != E.MESSAGE):
                    parent = match.group(3)
                    records.append(
                        Record(
                            match.group(2).decode(),
                            None if parent is None else parent.decode(),
                            kind,
                            None if role is None else role.decode(),
                            raw,
                            None,
                        )
                    )
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
            if migrations.header_version(header) < E.CURRENT_SESSION_VERSION:
                lazy = False  # migration needs every entry parsed
            continue
        if not isinstance(value, dict):
            bad.append(number)
            continue
        if value.get("type") == E.SESSION:
            continue  # a second header (Pi 0.73.1 wrote those); Pi ignores it too
        if lazy:
            record = Record.from_parsed(value, raw)
            if record is None:
                without_id += 1
            else:
                records.append(record)
        else:
            parsed.append((value, raw))
    if header is None:
        if data.strip(_WHITESPACE):
            raise not_a_session(path)
        return None

    migrated = migrations.migrate([header, *(entry for entry, _ in parsed)])
    for entry, raw in parsed:
        record = Record.from_parsed(entry, codec.dumps(entry) if migrated else raw)
        if record is None:
            without_id += 1
        else:
            records.append(record)

    return LoadedFile(
        header=header,
        records=records,
        diagnostics=_diagnostics(blank, bad, without_id),
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
