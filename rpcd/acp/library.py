"""The session library as ACP lists it: Pi's session id is the ACP ``sessionId``; pages with an
opaque cursor. The sessions themselves, their lookup by id and their deletion are the session
service's (``rpcd.sessions.library``), as for the JSON-RPC front.

Blocking file work; the agent calls these in a worker thread.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final

import attrs

if TYPE_CHECKING:
    from rpcd.sessions.library import SessionInfo, SessionLibrary

PAGE_SIZE: Final = 100
TITLE_CHARS: Final = 200


@attrs.frozen
class ListedSession:
    session_id: str
    cwd: str
    title: str
    updated_at: str
    path: str


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def listed(info: SessionInfo) -> ListedSession:
    title = (info.name or info.first_message).strip().splitlines()[0] if (info.name or info.first_message) else ""
    return ListedSession(info.id, info.cwd, title[:TITLE_CHARS], iso(info.modified), info.path)


def list_page(library: SessionLibrary, cwd: str | None, cursor: str | None) -> tuple[list[ListedSession], str | None]:
    """One page, newest first; ``cursor`` is the previous page's ``nextCursor``. A cursor that is not
    one of ours is ``ValueError``."""
    offset = 0
    if cursor is not None:
        if not cursor.startswith("o:") or not cursor[2:].isdigit():
            raise ValueError(f"not a cursor of this agent: {cursor!r}")
        offset = int(cursor[2:])
    infos = library.list(cwd)
    page = infos[offset:offset + PAGE_SIZE]
    more = offset + PAGE_SIZE < len(infos)
    return [listed(info) for info in page], (f"o:{offset + PAGE_SIZE}" if more else None)
