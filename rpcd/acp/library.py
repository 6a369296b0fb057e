"""The session store as ACP sees it: sessions by id (Pi's session id is the ACP ``sessionId``),
listings with an opaque cursor, deletion.

Blocking file work; the agent calls these in a worker thread.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from typing import Final

import attrs

from rpcd.core.errors import NotASessionError
from rpcd.store.listing import SessionInfo, build_session_info, list_sessions
from rpcd.store.loader import read_header
from rpcd.store.paths import default_session_dir

PAGE_SIZE: Final = 100
TITLE_CHARS: Final = 200


@attrs.frozen
class ListedSession:
    session_id: str
    cwd: str
    title: str
    updated_at: str
    path: str


def _root(agent_dir: str) -> str:
    return os.path.join(agent_dir, "sessions")


def _project_dirs(agent_dir: str) -> list[str]:
    root = _root(agent_dir)
    try:
        names = sorted(os.listdir(root))
    except OSError:
        return []
    return [os.path.join(root, name) for name in names]


def _all_sessions(agent_dir: str) -> list[SessionInfo]:
    """Every project's sessions under ``<agentDir>/sessions`` (one unreadable project never hides the rest).

    TODO(issue 19): ``rpcd.store.listing.list_all_sessions`` (the sessions branch) replaces this loop,
    with Pi's session-dir precedence.
    """
    infos: list[SessionInfo] = []
    for directory in _project_dirs(agent_dir):
        try:
            files = sorted(os.listdir(directory))
        except OSError:
            continue
        for name in files:
            if name.endswith(".jsonl"):
                info = build_session_info(os.path.join(directory, name))
                if info is not None:
                    infos.append(info)
    infos.sort(key=lambda info: info.modified, reverse=True)
    return infos


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def listed(info: SessionInfo) -> ListedSession:
    title = (info.name or info.first_message).strip().splitlines()[0] if (info.name or info.first_message) else ""
    return ListedSession(info.id, info.cwd, title[:TITLE_CHARS], iso(info.modified), info.path)


def list_page(agent_dir: str, cwd: str | None, cursor: str | None) -> tuple[list[ListedSession], str | None]:
    """One page, newest first; ``cursor`` is the previous page's ``nextCursor``. A cursor that is not
    one of ours is ``ValueError``."""
    offset = 0
    if cursor is not None:
        if not cursor.startswith("o:") or not cursor[2:].isdigit():
            raise ValueError(f"not a cursor of this agent: {cursor!r}")
        offset = int(cursor[2:])
    infos = list_sessions(os.path.abspath(cwd), agent_dir=agent_dir) if cwd is not None else _all_sessions(agent_dir)
    page = infos[offset:offset + PAGE_SIZE]
    more = offset + PAGE_SIZE < len(infos)
    return [listed(info) for info in page], (f"o:{offset + PAGE_SIZE}" if more else None)


def find_session_file(agent_dir: str, session_id: str, cwd: str | None = None) -> str | None:
    """The file of the session ``session_id``: by Pi's file name (``<time>_<id>.jsonl``) in the cwd's
    directory first, then in every project's; then by header, for a file named otherwise (imported)."""
    if not session_id or "/" in session_id or session_id.startswith("."):
        return None
    directories = _project_dirs(agent_dir)
    if cwd is not None:
        own = default_session_dir(os.path.abspath(cwd), agent_dir)
        directories = [own, *(d for d in directories if d != own)]
    suffix = f"_{session_id}.jsonl"
    by_header: list[str] = []
    for directory in directories:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            path = os.path.join(directory, name)
            if name.endswith(suffix) and _header_id(path) == session_id:
                return path
            if name.endswith(".jsonl"):
                by_header.append(path)
    return next((path for path in by_header if _header_id(path) == session_id), None)


def _header_id(path: str) -> str | None:
    header = read_header(path)
    value = header.get("id") if header is not None else None
    return value if isinstance(value, str) else None


def delete_session_file(agent_dir: str, path: str) -> None:
    """Remove a session file of this agent's store (refuses anything else, untouched).

    TODO(issue 19): ``rpcd.store.library.delete_session_file`` (the sessions branch: to the user's
    trash, with the writer lock) replaces this once it is on main.
    """
    root = os.path.realpath(_root(agent_dir))
    real = os.path.realpath(path)
    if os.path.dirname(os.path.dirname(real)) != root or _header_id(real) is None:
        raise NotASessionError(f"Not a session file of the session store: {path}", session_path=path)
    os.remove(real)
