"""Full-text search of session files, with the query syntax of Pi's session picker.

**Query syntax** (Pi 0.85.0's ``parseSearchQuery``, ``session-selector-search.js``, ported rule for
rule): the query is trimmed; ``re:<pattern>`` is one case-insensitive regular expression (an empty
pattern or one that does not compile is an error); otherwise the query is split into words at
whitespace, and a ``"quoted phrase"`` is one token (a quote also ends the word before it); when a
quote is left open, the quotes are ordinary characters and the query is split at whitespace only.

**Matching.** A session matches when *every* token matches somewhere in it (Pi's AND): a phrase
as a case-insensitive substring with runs of whitespace counted as one space (Pi's rule); a word
as a case-insensitive substring, where Pi's picker matches a word as a *fuzzy subsequence* of the
session's text: over the full text of a session a subsequence matches nearly every session (``fix``
is an f, then an i, then an x anywhere), so here a word must occur as written (docs/pi-compat.md);
a regex with Python's ``re`` (JavaScript and Python agree on the common syntax; ``re:`` patterns that
use JavaScript-only syntax are refused as not compiling). What is searched: the session's id, cwd
and name (as in Pi), and, unlike Pi's picker (user and assistant text only), every message: user and
assistant text, thinking, each tool call (its name and arguments), tool results, user ``bash`` runs,
extension messages, compaction and branch summaries. A regex and a phrase match within one piece of
text (one message block), never across two.

**Results** name the matching entries with a snippet around the first hit of each (``Snippet``).

Reads are bounded: only regular files are opened (never a FIFO or a device), read in chunks,
one line at a time; a piece of text longer than ``MAX_UNIT_CHARS`` is searched in its first
``MAX_UNIT_CHARS`` characters.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, Literal

import attrs

from rpcd.core.files import open_regular
from rpcd.store import entries as E
from rpcd.store.listing import SessionInfo, SessionInfoBuilder, recency_key
from rpcd.store.loader import parse_line
from rpcd.store.reading import iter_lines

__all__ = [
    "MAX_SNIPPETS",
    "QueryError",
    "RecencyKey",
    "SearchPage",
    "SearchQuery",
    "SessionHit",
    "SessionText",
    "Snippet",
    "Token",
    "Unit",
    "header_unit",
    "iter_file_lines",
    "match_session",
    "parse_query",
    "read_session_text",
    "search_files",
    "session_unit",
    "sessions_in",
]

MAX_UNIT_CHARS: Final = 1 << 20
"""The longest piece of text searched whole (a tool's output is cut to 50 KB by the tool anyway)."""
MAX_SNIPPETS: Final = 5
SNIPPET_CONTEXT: Final = 60
"""Characters of context on each side of a hit in a snippet."""

UnitKind = Literal["session", "name", "user", "assistant", "thinking", "toolCall", "toolResult", "bash",
                   "custom", "summary"]


class QueryError(ValueError):
    """A query that cannot run (Pi's ``parsed.error``: an empty or invalid ``re:`` pattern)."""


# -- the query --------------------------------------------------------------------------------


@attrs.frozen
class Token:
    kind: Literal["word", "phrase"]
    value: str
    """As typed; ``needle`` is what is looked for."""

    @property
    def needle(self) -> str:
        """Lower-cased, whitespace folded to single spaces and trimmed (Pi's ``normalizeWhitespaceLower``)."""
        return normalize(self.value)


@attrs.frozen
class SearchQuery:
    tokens: tuple[Token, ...] = ()
    regex: re.Pattern[str] | None = None

    @property
    def empty(self) -> bool:
        return self.regex is None and not any(t.needle for t in self.tokens)


def normalize(text: str) -> str:
    return " ".join(text.lower().split())


def parse_query(query: str) -> SearchQuery:
    """Pi's ``parseSearchQuery``; ``QueryError`` where Pi reports ``error``."""
    trimmed = query.strip()
    if not trimmed:
        return SearchQuery()
    if trimmed.startswith("re:"):
        pattern = trimmed[3:].strip()
        if not pattern:
            raise QueryError("Empty regex")
        try:
            return SearchQuery(regex=re.compile(pattern, re.IGNORECASE))
        except (re.error, RecursionError, OverflowError) as exc:
            raise QueryError(f"Invalid regex: {exc}") from None
    tokens: list[Token] = []
    buf: list[str] = []
    in_quote = False

    def flush(kind: Literal["word", "phrase"]) -> None:
        value = "".join(buf).strip()
        buf.clear()
        if value:
            tokens.append(Token(kind, value))

    for ch in trimmed:
        if ch == '"':
            if in_quote:
                flush("phrase")
                in_quote = False
            else:
                flush("word")
                in_quote = True
            continue
        if not in_quote and ch.isspace():
            flush("word")
            continue
        buf.append(ch)
    if in_quote:  # an unbalanced quote: plain whitespace tokenization, quotes included
        return SearchQuery(tokens=tuple(Token("word", w) for w in trimmed.split()))
    flush("word")
    return SearchQuery(tokens=tuple(tokens))


# -- what a session says ------------------------------------------------------------------------


@attrs.frozen
class Unit:
    """One searchable piece of a session: ``text`` with whitespace runs folded to one space."""

    entry_id: str | None
    """The entry it comes from (``None``: the session's id and cwd)."""
    kind: UnitKind
    text: str


@attrs.frozen
class SessionText:
    info: SessionInfo
    units: tuple[Unit, ...]


def _fold(text: str) -> str:
    return " ".join(text[: MAX_UNIT_CHARS * 2].split())[:MAX_UNIT_CHARS]


def _texts(content: Any) -> Iterator[tuple[UnitKind | None, str]]:
    """``(kind, text)`` of each block of a message's content (``None``: the message's own kind)."""
    if isinstance(content, str):
        yield None, content
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            yield None, block["text"]
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            yield "thinking", block["thinking"]
        elif kind == "toolCall":
            yield "toolCall", f"{block.get('name', '')} {_arguments(block.get('arguments'))}"


def _arguments(value: Any, depth: int = 0) -> str:
    """A tool call's arguments as text: ``key: value`` pairs with string values as they are (a
    command's newlines stay whitespace, unlike in JSON), nested values likewise, 16 levels deep."""
    if isinstance(value, str):
        return value
    if depth > 16:
        return ""
    if isinstance(value, Mapping):
        return " ".join(f"{key}: {_arguments(item, depth + 1)}" for key, item in value.items())
    if isinstance(value, list | tuple):
        return " ".join(_arguments(item, depth + 1) for item in value)
    if value is None:
        return ""
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return ""


def entry_units(entry: Mapping[str, Any]) -> Iterator[Unit]:
    """The searchable text of one entry."""
    entry_id = entry.get("id")
    if not isinstance(entry_id, str):  # a version-1 file's entries have none (Pi's picker reads them)
        entry_id = None
    kind = entry.get("type")
    pieces: list[tuple[UnitKind, str]] = []
    if kind == E.MESSAGE and isinstance(entry.get("message"), Mapping):
        message = entry["message"]
        role = message.get("role")
        own: UnitKind
        if role == "bashExecution":
            pieces.append(("bash", f"{message.get('command', '')}\n{message.get('output', '')}"))
            own = "bash"
        else:
            own = {"user": "user", "assistant": "assistant", "toolResult": "toolResult"}.get(  # type: ignore[assignment]
                str(role), "custom")
            for block_kind, text in _texts(message.get("content")):
                pieces.append((block_kind or own, text))
        if role == "custom" and not pieces:
            pieces.append(("custom", ""))
    elif kind in (E.COMPACTION, E.BRANCH_SUMMARY) and isinstance(entry.get("summary"), str):
        pieces.append(("summary", entry["summary"]))
    elif kind == E.CUSTOM_MESSAGE:
        pieces.extend(("custom", text) for _, text in _texts(entry.get("content")))
    elif kind == E.SESSION_INFO and isinstance(entry.get("name"), str):
        pieces.append(("name", entry["name"]))
    for unit_kind, text in pieces:
        folded = _fold(text)
        if folded:
            yield Unit(entry_id, unit_kind, folded)


def iter_file_lines(path: str, *, start: int = 0) -> Iterator[bytes]:
    """The lines of the regular file ``path`` from byte ``start`` (a FIFO or device is refused
    unopened: ``rpcd.core.files``); a last line without its newline is included, a line over
    ``max_line_bytes()`` is skipped unheld. Up to the size the file had when opened
    (``rpcd.store.reading.iter_lines``, the one line reader of session files)."""
    fd = open_regular(path)
    try:
        os.lseek(fd, start, os.SEEK_SET)
        for line, _ended in iter_lines(fd, cap=max(0, os.fstat(fd).st_size - start)):
            if line is not None:
                yield line
    finally:
        os.close(fd)


def read_session_text(path: str) -> SessionText | None:
    """Everything searchable in the session file at ``path``; ``None`` for what is not a session."""
    try:
        mtime = os.stat(path).st_mtime
        builder = SessionInfoBuilder()
        units: list[Unit] = []
        for line in iter_file_lines(path):
            entry = parse_line(line)
            if entry is None:
                continue
            if not builder.add(entry):
                return None
            if isinstance(entry, dict) and entry.get("type") != E.SESSION:
                units.extend(entry_units(entry))
    except OSError:
        return None
    info = builder.finish(path, mtime)
    if info is None:
        return None
    return SessionText(info, (session_unit(info), *units))


def session_unit(info: SessionInfo) -> Unit:
    """The session's own searchable text: its id and cwd (Pi's picker searches both)."""
    return Unit(None, "session", _fold(f"{info.id} {info.cwd}"))


def header_unit(header: Mapping[str, Any]) -> Unit:
    """``session_unit`` from the header line itself."""
    cwd = header.get("cwd")
    return Unit(None, "session", _fold(f"{header.get('id')} {cwd if isinstance(cwd, str) else ''}"))


# -- matching -------------------------------------------------------------------------------------


@attrs.frozen
class Snippet:
    entry_id: str | None
    kind: UnitKind
    text: str
    """The unit's text around the first hit (``…`` where it was cut)."""
    start: int
    end: int
    """Where the hit is in ``text``."""


@attrs.frozen
class SessionHit:
    info: SessionInfo
    snippets: tuple[Snippet, ...]
    match_count: int
    """How many pieces of text matched (``snippets`` shows the first ``MAX_SNIPPETS``)."""


def _find(query: SearchQuery, text: str, lowered: str) -> tuple[int, int] | None:
    """The first hit of any token (or the regex) in ``text``; ``lowered`` is ``text.lower()``."""
    if query.regex is not None:
        found = query.regex.search(text)
        return (found.start(), found.end()) if found is not None else None
    best: tuple[int, int] | None = None
    for token in query.tokens:
        needle = token.needle
        if not needle:
            continue
        at = lowered.find(needle)
        if at >= 0 and (best is None or at < best[0]):
            best = (at, at + len(needle))
    return best


def _snippet(unit: Unit, hit: tuple[int, int]) -> Snippet:
    start, end = hit
    text = unit.text
    left = max(0, start - SNIPPET_CONTEXT)
    right = min(len(text), end + SNIPPET_CONTEXT)
    prefix = "…" if left > 0 else ""
    suffix = "…" if right < len(text) else ""
    shown = prefix + text[left:right] + suffix
    offset = len(prefix) - left
    return Snippet(unit.entry_id, unit.kind, shown, max(0, start + offset), min(len(shown), end + offset))


def match_session(session: SessionText, query: SearchQuery, max_snippets: int = MAX_SNIPPETS) -> SessionHit | None:
    """The session's hit if every token matches somewhere in it (the regex: once), else ``None``."""
    lowered = [unit.text.lower() for unit in session.units]
    if query.regex is None:
        for token in query.tokens:
            needle = token.needle
            if needle and not any(needle in text for text in lowered):
                return None
    snippets: list[Snippet] = []
    count = 0
    for unit, low in zip(session.units, lowered, strict=True):
        hit = _find(query, unit.text, low)
        if hit is None:
            continue
        count += 1
        if len(snippets) < max_snippets:
            snippets.append(_snippet(unit, hit))
    if count == 0 and not query.empty:
        return None
    return SessionHit(session.info, tuple(snippets), count)


RecencyKey = tuple[datetime, str]
"""``listing.recency_key``: (last activity, path); newest = largest."""


@attrs.frozen
class SearchPage:
    hits: list[SessionHit]
    more: bool
    """Whether sessions after the last hit match too (the next page)."""


def search_files(paths: Iterable[str], query: SearchQuery, *, after: RecencyKey | None = None, limit: int = 20,
                 max_snippets: int = MAX_SNIPPETS) -> SearchPage:
    """One page of hits among the session files ``paths``, newest first, after ``after``: every file
    is read and parsed, one at a time (the streaming search, when the index cannot be used)."""
    hits: list[SessionHit] = []
    for path in paths:
        session = read_session_text(path)
        if session is None or (after is not None and recency_key(session.info) >= after):
            continue
        hit = match_session(session, query, max_snippets)
        if hit is not None:
            hits.append(hit)
    hits.sort(key=lambda hit: recency_key(hit.info), reverse=True)
    return SearchPage(hits[:limit], more=len(hits) > limit)


def sessions_in(directories: Sequence[str]) -> list[str]:
    """The ``*.jsonl`` files directly in ``directories`` (an unreadable directory is skipped)."""
    found: list[str] = []
    for directory in directories:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        found.extend(os.path.join(directory, name) for name in names if name.endswith(".jsonl"))
    return found
