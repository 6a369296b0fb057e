"""Listing a project's sessions and finding the most recent one, as Pi's pickers do.

Listing reads every file of a directory, line by line within ``rpcd.store.reading``'s limits (a
huge line streams past unheld); a file that is unreadable or not a session is skipped (never
modified), exactly as Pi skips it. Only regular files are read: a FIFO,
socket or device named ``*.jsonl`` is skipped without being opened for a blocking read.

"Most recent" has one definition here, ``recency_key``: a session's last user/assistant
activity (Pi's ``SessionInfo.modified``: the newest message timestamp, else the header's
time, else the file's mtime), ties broken by path. The listing sorts by it and ``--continue``
(``rpcd.store.recency.find_most_recent_session``, from a cache of these facts) picks its maximum, so
the session a client sees first is the
one ``--continue`` resumes. (Pi's own ``--continue`` takes the newest file *mtime* instead;
docs/pi-compat.md.)
"""

from __future__ import annotations

import contextlib
import math
import os
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import attrs

from rpcd.core.errors import InvalidArgumentError, SessionFileNotFoundError
from rpcd.core.files import open_regular
from rpcd.core.jstext import content_text
from rpcd.store import entries as E
from rpcd.store._ids import parse_iso
from rpcd.store.loader import parse_line, read_header
from rpcd.store.paths import encode_cwd, get_agent_dir
from rpcd.store.reading import HEADER_SCAN_BYTES, iter_lines, max_session_bytes, read_cap


@attrs.frozen
class SessionInfo:
    path: str
    id: str
    cwd: str
    name: str | None
    parent_session_path: str | None
    created: datetime
    modified: datetime
    message_count: int
    first_message: str
    all_messages_text: str = ""


def _default_dir_path(cwd: str, agent_dir: str | None) -> str:
    base = agent_dir if agent_dir is not None else get_agent_dir()
    return os.path.join(base, "sessions", encode_cwd(os.path.abspath(cwd)))


def _filters_by_cwd(directory: str, cwd: str, custom_dir: bool, agent_dir: str | None) -> bool:
    """Pi: a custom session dir other than the cwd's default dir only shows that cwd's sessions."""
    return custom_dir and os.path.abspath(directory) != os.path.abspath(_default_dir_path(cwd, agent_dir))


def _from_ms(ms: float) -> datetime:
    """Whole milliseconds, as JavaScript's ``Date`` holds them (the wire prints milliseconds too)."""
    return datetime.fromtimestamp(math.floor(ms) / 1000, UTC)


def _to_ms(moment: datetime) -> datetime:
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000)


SortKey = Literal["updated", "created"]


def recency_key(info: SessionInfo, sort: SortKey = "updated") -> tuple[datetime, str]:
    """The one ordering of sessions (newest = largest): by last activity (or creation), then path."""
    return (info.modified if sort == "updated" else info.created, info.path)


def build_session_info(path: str) -> SessionInfo | None:
    """Pi's ``buildSessionInfo``: ``None`` for anything that is not a readable session.

    The file streams past line by line within ``rpcd.store.reading``'s limits (a line over
    ``max_line_bytes()`` is skipped unheld); a file over ``max_session_bytes()`` — which cannot be
    opened — is listed from its header alone, so it can still be found and deleted."""
    builder = SessionInfoBuilder()
    try:
        # A FIFO or device named *.jsonl is no session: never opened for a blocking read.
        fd = open_regular(path)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        cap = HEADER_SCAN_BYTES if info.st_size > max_session_bytes() else read_cap(info.st_size)
        for line, _ended in iter_lines(fd, cap=cap):
            entry = parse_line(line) if line is not None else None
            if entry is not None and not builder.add(entry):
                return None
            if builder.header is not None and cap == HEADER_SCAN_BYTES:
                break  # too large to open: the header says what there is to say
    except OSError:
        return None
    finally:
        os.close(fd)
    return builder.finish(path, info.st_mtime)


class SessionInfoBuilder:
    """Pi's ``buildSessionInfo`` over a file's parsed lines, one at a time (so a reader that also
    wants something else of every entry, like the full-text search, reads the file once)."""

    __slots__ = ("first_message", "header", "last_activity", "message_count", "name", "texts")

    def __init__(self) -> None:
        self.header: dict[str, Any] | None = None
        self.message_count = 0
        self.first_message = ""
        self.texts: list[str] = []
        self.name: str | None = None
        self.last_activity: float | None = None

    def add(self, entry: Any) -> bool:
        """Take the next parsed line; ``False`` when the first one is not a session header."""
        if self.header is None:
            if not isinstance(entry, dict) or entry.get("type") != E.SESSION:
                return False
            self.header = entry
            return True
        if not isinstance(entry, dict):
            return True
        kind = entry.get("type")
        if kind == E.SESSION_INFO:
            value = entry.get("name")
            self.name = (E.js_trim(value) or None) if isinstance(value, str) else None
        if kind != E.MESSAGE:
            return True
        self.message_count += 1
        message = entry.get("message")
        if not isinstance(message, dict) or "content" not in message:
            return True
        role = message.get("role")
        if role not in ("user", "assistant"):
            return True
        stamp = message.get("timestamp")
        if isinstance(stamp, int | float) and not isinstance(stamp, bool):
            self.last_activity = max(self.last_activity or 0, stamp)
        else:
            moment = parse_iso(entry.get("timestamp"))
            if moment is not None:
                self.last_activity = max(self.last_activity or 0, moment.timestamp() * 1000)
        text = content_text(message.get("content"), " ")
        if text:
            self.texts.append(text)
            if not self.first_message and role == "user":
                self.first_message = text
        return True

    def finish(self, path: str, mtime_s: float) -> SessionInfo | None:
        """The session's facts (``mtime_s``: the file's mtime, the fallback of its times)."""
        header = self.header
        if header is None:
            return None
        mtime = _from_ms(mtime_s * 1000)
        parsed = parse_iso(header.get("timestamp"))
        created = _to_ms(parsed) if parsed is not None else None
        modified = created or mtime
        if self.last_activity is not None and self.last_activity > 0:
            # A hand-edited timestamp can lie outside what datetime holds (JS: Invalid Date): keep the fallback.
            with contextlib.suppress(OverflowError, ValueError, OSError):
                modified = _from_ms(self.last_activity)
        cwd = header.get("cwd")
        parent = header.get("parentSession")
        return SessionInfo(
            path=path,
            id=str(header.get("id")),
            cwd=cwd if isinstance(cwd, str) else "",
            name=self.name,
            parent_session_path=parent if isinstance(parent, str) else None,
            created=created or mtime,
            modified=modified,
            message_count=self.message_count,
            first_message=self.first_message or "(no messages)",
            all_messages_text=" ".join(self.texts),
        )


def _jsonl_files(directory: str) -> list[str]:
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    return [os.path.join(directory, n) for n in names if n.endswith(".jsonl")]


def _newest_first(sessions: Iterable[SessionInfo], sort: SortKey = "updated") -> list[SessionInfo]:
    return sorted(sessions, key=lambda info: recency_key(info, sort), reverse=True)


def list_sessions(
    cwd: str, session_dir: str | None = None, *, agent_dir: str | None = None, sort: SortKey = "updated"
) -> list[SessionInfo]:
    """The sessions of ``cwd``, newest first: its default directory, or ``session_dir`` (Pi: a custom
    directory other than the cwd's default one holds every project's sessions, so only those whose
    header names ``cwd`` are listed)."""
    directory = session_dir if session_dir is not None else _default_dir_path(cwd, agent_dir)
    filter_cwd = _filters_by_cwd(directory, cwd, session_dir is not None, agent_dir)
    sessions = [info for info in map(build_session_info, _jsonl_files(directory)) if info is not None]
    if filter_cwd:
        sessions = [info for info in sessions if info.cwd == cwd]
    return _newest_first(sessions, sort)


def list_all_sessions(
    session_dir: str | None = None, *, agent_dir: str | None = None, sort: SortKey = "updated"
) -> list[SessionInfo]:
    """Pi's ``listAll``: every session of a custom directory, else of every project directory under
    ``<agentDir>/sessions`` (one unreadable project never hides the rest), newest first."""
    if session_dir is not None:
        files = _jsonl_files(session_dir)
    else:
        root = os.path.join(agent_dir if agent_dir is not None else get_agent_dir(), "sessions")
        try:
            projects = sorted(os.listdir(root))
        except OSError:
            projects = []
        files = [path for name in projects for path in _jsonl_files(os.path.join(root, name))]
    return _newest_first(info for info in map(build_session_info, files) if info is not None)


# -- search ------------------------------------------------------------------------------------

_QUOTED = re.compile(r'"([^"]*)"|(\S+)')
_SPACE = re.compile(r"\s+")


def parse_query(query: str) -> list[str]:
    """Search terms: whitespace-separated words, a ``"quoted phrase"`` as one term (an unbalanced quote
    is an ordinary character, as in Pi's picker), lower-cased with runs of whitespace as one space."""
    text = query.strip()
    if text.count('"') % 2:
        words = text.split()
    else:
        words = [phrase if phrase is not None and word == "" else word for phrase, word in _QUOTED.findall(text)]
    return [term for term in (_SPACE.sub(" ", w).strip().lower() for w in words) if term]


def session_matches(info: SessionInfo, terms: Sequence[str]) -> bool:
    """Every term occurs (case-insensitively) in the session's name, first user message or cwd."""
    if not terms:
        return True
    haystack = _SPACE.sub(" ", f"{info.name or ''}\n{info.first_message}\n{info.cwd}").lower()
    return all(term in haystack for term in terms)


# -- a session named by id ---------------------------------------------------------------------


@attrs.frozen
class SessionRef:
    """What a session argument (``--session``, ``rpcctl resume``) names: ``path`` — a path as given;
    ``local`` — a session of the cwd's project; ``global`` — one of another project (``cwd``)."""

    path: str
    scope: Literal["path", "local", "global"]
    cwd: str | None = None


MAX_LISTED_MATCHES = 5
HEADER_PEEK = 1 << 16
"""Bytes read from each file to find its header when looking a session up by id."""


def looks_like_path(ref: str) -> bool:
    """Pi's rule: a ``/`` or ``\\``, or a ``.jsonl`` ending, makes a session argument a path."""
    return "/" in ref or "\\" in ref or ref.endswith(".jsonl")


def resolve_session_ref(
    ref: str, cwd: str, session_dir: str | None = None, *, agent_dir: str | None = None
) -> SessionRef:
    """Pi's ``resolveSessionPath``: a path-like ``ref`` is a path (absolute against ``cwd``); else a
    session id or id prefix, looked up in the cwd's project, then in every project: the exact id
    first, else the one session whose id starts with ``ref``. Unlike Pi (which takes the newest of
    several matches), a prefix several sessions share is refused, naming them (copies of one session, an
    import of it, count once: the newest file)
    (``InvalidArgumentError``); nothing found is ``SessionFileNotFoundError``. Only the first line
    of each file is read."""
    if looks_like_path(ref):
        return SessionRef(os.path.normpath(os.path.join(cwd, os.path.expanduser(ref))), "path")
    if not ref.strip():
        raise InvalidArgumentError("A session id cannot be empty", param="session")
    local_dir = session_dir if session_dir is not None else _default_dir_path(cwd, agent_dir)
    filter_cwd = _filters_by_cwd(local_dir, cwd, session_dir is not None, agent_dir)
    local = [(path, header) for path, header in _headers(_jsonl_files(local_dir))
             if not filter_cwd or header.get("cwd") == cwd]
    found = _match_id(ref, local)
    if found is not None:
        return SessionRef(found[0], "local", _header_cwd(found[1]))
    if session_dir is not None:
        everywhere = _headers(_jsonl_files(session_dir))
    else:
        root = os.path.join(agent_dir if agent_dir is not None else get_agent_dir(), "sessions")
        try:
            projects = sorted(os.listdir(root))
        except OSError:
            projects = []
        everywhere = _headers(path for name in projects for path in _jsonl_files(os.path.join(root, name)))
    found = _match_id(ref, everywhere)
    if found is not None:
        same = os.path.abspath(_header_cwd(found[1]) or "") == os.path.abspath(cwd)
        return SessionRef(found[0], "local" if same else "global", _header_cwd(found[1]))
    raise SessionFileNotFoundError(f"No session found matching '{ref}'")


def _headers(paths: Iterable[str]) -> list[tuple[str, dict[str, Any]]]:
    found: list[tuple[str, dict[str, Any]]] = []
    for path in paths:
        header = read_header(path, HEADER_PEEK)
        if header is not None and isinstance(header.get("id"), str):
            found.append((path, header))
    return found


def _header_cwd(header: dict[str, Any]) -> str | None:
    cwd = header.get("cwd")
    return cwd if isinstance(cwd, str) else None


def _match_id(ref: str, sessions: Sequence[tuple[str, dict[str, Any]]]) -> tuple[str, dict[str, Any]] | None:
    exact = [item for item in sessions if item[1]["id"] == ref]
    matches = exact or [item for item in sessions if str(item[1]["id"]).startswith(ref)]
    if not matches:
        return None
    if len({item[1]["id"] for item in matches}) > 1:
        ids = sorted({str(item[1]["id"]) for item in matches})
        shown = ", ".join(ids[:MAX_LISTED_MATCHES]) + (", ..." if len(ids) > MAX_LISTED_MATCHES else "")
        raise InvalidArgumentError(
            f"Session id prefix '{ref}' is ambiguous: {len(ids)} sessions match ({shown}); give more of the id",
            param="session")
    return max(matches, key=lambda item: (_mtime(item[0]), item[0]))  # copies of one session: the newest


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return 0.0
