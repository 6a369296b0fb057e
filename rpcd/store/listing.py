"""Listing a project's sessions and finding the most recent one, as Pi's pickers do.

Listing reads every file of a directory; a file that is unreadable or not a session is
skipped (never modified), exactly as Pi skips it. Only regular files are read: a FIFO,
socket or device named ``*.jsonl`` is skipped without being opened for a blocking read.

"Most recent" has one definition here, ``recency_key``: a session's last user/assistant
activity (Pi's ``SessionInfo.modified``: the newest message timestamp, else the header's
time, else the file's mtime), ties broken by path. The listing sorts by it and ``--continue``
(``find_most_recent_session``) picks its maximum, so the session a client sees first is the
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

from rpcd.core.files import read_regular
from rpcd.store import entries as E
from rpcd.store._ids import parse_iso
from rpcd.store.loader import parsed_lines
from rpcd.store.paths import encode_cwd, get_agent_dir


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
    """Pi's ``buildSessionInfo``: ``None`` for anything that is not a readable session."""
    try:
        # A FIFO or device named *.jsonl is no session: never opened for a blocking read.
        data = read_regular(path)
        mtime = _from_ms(os.stat(path).st_mtime * 1000)
    except OSError:
        return None
    header: dict[str, Any] | None = None
    message_count = 0
    first_message = ""
    texts: list[str] = []
    name: str | None = None
    last_activity: float | None = None
    for entry in parsed_lines(data):
        if header is None:
            if not isinstance(entry, dict) or entry.get("type") != E.SESSION:
                return None
            header = entry
            continue
        if not isinstance(entry, dict):
            continue
        kind = entry.get("type")
        if kind == E.SESSION_INFO:
            value = entry.get("name")
            name = (E.js_trim(value) or None) if isinstance(value, str) else None
        if kind != E.MESSAGE:
            continue
        message_count += 1
        message = entry.get("message")
        if not isinstance(message, dict) or "content" not in message:
            continue
        role = message.get("role")
        if role not in ("user", "assistant"):
            continue
        stamp = message.get("timestamp")
        if isinstance(stamp, int | float) and not isinstance(stamp, bool):
            last_activity = max(last_activity or 0, stamp)
        else:
            moment = parse_iso(entry.get("timestamp"))
            if moment is not None:
                last_activity = max(last_activity or 0, moment.timestamp() * 1000)
        text = E.message_text(message.get("content"))
        if not text:
            continue
        texts.append(text)
        if not first_message and role == "user":
            first_message = text
    if header is None:
        return None
    parsed = parse_iso(header.get("timestamp"))
    created = _to_ms(parsed) if parsed is not None else None
    modified = created or mtime
    if last_activity is not None and last_activity > 0:
        # A hand-edited timestamp can lie outside what datetime holds (JS: Invalid Date): keep the fallback.
        with contextlib.suppress(OverflowError, ValueError, OSError):
            modified = _from_ms(last_activity)
    cwd = header.get("cwd")
    parent = header.get("parentSession")
    return SessionInfo(
        path=path,
        id=str(header.get("id")),
        cwd=cwd if isinstance(cwd, str) else "",
        name=name,
        parent_session_path=parent if isinstance(parent, str) else None,
        created=created or mtime,
        modified=modified,
        message_count=message_count,
        first_message=first_message or "(no messages)",
        all_messages_text=" ".join(texts),
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


def find_most_recent_session(
    cwd: str, directory: str, *, custom_dir: bool = False, agent_dir: str | None = None
) -> str | None:
    """The session ``list_sessions`` would list first (``recency_key``), among files whose header is
    valid (and, in a custom dir, whose cwd matches)."""
    filter_cwd = _filters_by_cwd(directory, cwd, custom_dir, agent_dir)
    candidates: list[SessionInfo] = []
    for path in _jsonl_files(directory):
        info = build_session_info(path)
        if info is not None and not (filter_cwd and info.cwd != cwd):
            candidates.append(info)
    if not candidates:
        return None
    return max(candidates, key=recency_key).path


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
