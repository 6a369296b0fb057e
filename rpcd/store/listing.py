"""Listing a project's sessions and finding the most recent one, as Pi's pickers do.

Listing reads every file of a directory; a file that is unreadable or not a session is
skipped (never modified), exactly as Pi skips it. Only regular files are read: a FIFO,
socket or device named ``*.jsonl`` is skipped without being opened for a blocking read.
"""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from typing import Any

import attrs

from rpcd.core.files import read_regular
from rpcd.store import entries as E
from rpcd.store._ids import parse_iso
from rpcd.store.loader import parsed_lines, read_header
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
    return datetime.fromtimestamp(ms / 1000, UTC)


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
    created = parse_iso(header.get("timestamp"))
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


def list_sessions(cwd: str, session_dir: str | None = None, *, agent_dir: str | None = None) -> list[SessionInfo]:
    directory = session_dir if session_dir is not None else _default_dir_path(cwd, agent_dir)
    filter_cwd = _filters_by_cwd(directory, cwd, session_dir is not None, agent_dir)
    sessions = [info for info in map(build_session_info, _jsonl_files(directory)) if info is not None]
    if filter_cwd:
        sessions = [info for info in sessions if info.cwd == cwd]
    sessions.sort(key=lambda info: info.modified, reverse=True)
    return sessions


def find_most_recent_session(
    cwd: str, directory: str, *, custom_dir: bool = False, agent_dir: str | None = None
) -> str | None:
    """Newest ``*.jsonl`` by mtime whose header is valid (and, in a custom dir, whose cwd matches)."""
    filter_cwd = _filters_by_cwd(directory, cwd, custom_dir, agent_dir)
    candidates: list[tuple[float, str]] = []
    for path in _jsonl_files(directory):
        header = read_header(path)
        if header is None or (filter_cwd and header.get("cwd") != cwd):
            continue
        try:
            candidates.append((os.stat(path).st_mtime, path))
        except OSError:
            continue
    if not candidates:
        return None
    return max(candidates)[1]
