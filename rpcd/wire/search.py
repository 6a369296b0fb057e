"""Wire handlers of stored sessions beyond the listing: ``searchSessions`` (full text, Pi's picker
query syntax) and ``readSession`` (a stored session's entries, without switching to it).

Both read files of the session store, not the current session, so they do not queue behind
replacements (like ``listSessions``); they wait for startup and fail closed once the host is
unusable. The work is the session service's (``rpcd.sessions.search``), in a worker thread; this
module decodes the params, encodes the page and owns the cursor (a page's last recency key, tied
to its query).
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from typing import Any, Final

import anyio

from rpcd.host.host import SerializedHost
from rpcd.protocol import types as t
from rpcd.protocol.names import SEARCH_SESSIONS
from rpcd.sessions.search import SessionSearch
from rpcd.wire.handlers import InvalidParamsError, host_usable

DEFAULT_LIMIT: Final = 20
READ_LIMIT: Final = 1000
TITLE_CHARS: Final = 200


class SearchMethods:
    def __init__(self, host: SerializedHost, search: SessionSearch) -> None:
        self._host = host
        self._search = search

    async def search_sessions(self, params: t.SearchSessionsParams) -> t.SearchSessionsResult:
        await host_usable(self._host)
        after = _decode_cursor(params.cursor, params.query) if params.cursor is not None else None
        limit = DEFAULT_LIMIT if params.limit is None else params.limit
        page = await anyio.to_thread.run_sync(lambda: self._search.search(
            params.query, cwd=params.cwd, after=after, limit=limit))
        hits = [_hit(hit) for hit in page.hits]
        last = page.hits[-1].info if page.hits else None
        cursor = _encode_cursor(params.query, last.modified, last.path) if page.more and last is not None else None
        return t.SearchSessionsResult(results=hits, next_cursor=cursor)

    async def read_session(self, params: t.ReadSessionParams) -> t.ReadSessionResult:
        await host_usable(self._host)
        cwd = self._host.state().cwd  # an id prefix is looked up in this project first
        page = await anyio.to_thread.run_sync(lambda: self._search.read(
            session_file=params.session_file, session_id=params.session_id, since=params.since,
            limit=READ_LIMIT if params.limit is None else params.limit, cwd=cwd))
        return t.ReadSessionResult(session_file=page.session_file, header=page.header, entries=page.entries,
                                   leaf_id=page.leaf_id, next_since=page.next_since)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _hit(hit: Any) -> t.SearchHit:
    info = hit.info
    return t.SearchHit(
        session_id=info.id, session_file=info.path, cwd=info.cwd, title=(info.name or info.first_message)[:TITLE_CHARS],
        created_at=_iso(info.created), updated_at=_iso(info.modified), message_count=info.message_count,
        match_count=hit.match_count, name=info.name,
        snippets=[t.SearchSnippet(kind=s.kind, text=s.text, start=s.start, end=s.end, entry_id=s.entry_id)
                  for s in hit.snippets])


def _encode_cursor(query: str, modified: datetime, path: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([query, _iso(modified), path]).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, query: str) -> tuple[datetime, str]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if isinstance(raw, list) and len(raw) == 3 and all(isinstance(x, str) for x in raw):
            if raw[0] != query:
                raise InvalidParamsError(SEARCH_SESSIONS, "cursor belongs to another query", "$.cursor")
            return datetime.fromisoformat(raw[1].replace("Z", "+00:00")), raw[2]
    except (ValueError, TypeError):
        pass
    raise InvalidParamsError(SEARCH_SESSIONS, "cursor is not one this daemon issued", "$.cursor")
