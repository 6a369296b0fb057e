"""Stored sessions beyond the listing: full-text search, reading one without switching to it, and
naming one by id or id prefix — over the directories the session library uses.

Which files: the configured session directory (``--session-dir``, the variable, the setting: it
holds every project's sessions, filtered by each header's cwd), else ``<agentDir>/sessions/*/``
(every project's directory, or the one of ``cwd``). The search goes through the agent dir's index
(``rpcd.store.search_index``: built on first use, then kept current), or reads the files when
SQLite cannot index; a deleted session is dropped from the index at once (``forget``).
"""

from __future__ import annotations

import base64
import json
import os
from datetime import datetime
from typing import Any, Final

from rpcd.core.errors import InvalidArgumentError, InvalidEntryError, SessionFileTooLargeError
from rpcd.protocol import types as t
from rpcd.store.listing import SessionRef, recency_key, resolve_session_ref
from rpcd.store.paths import encode_cwd

__all__ = ["SessionSearch"]

DEFAULT_LIMIT: Final = 20
MAX_LIMIT: Final = 200
READ_LIMIT: Final = 1000
MAX_READ_LIMIT: Final = 10_000
MAX_READ_BYTES: Final = 1 << 30
TITLE_CHARS: Final = 200


class SessionSearch:
    def __init__(self, agent_dir: str, session_dir: str | None) -> None:
        self.agent_dir = agent_dir
        self.session_dir = session_dir

    # -- where sessions are ---------------------------------------------------------------------

    def directories(self, cwd: str | None) -> list[str]:
        if self.session_dir is not None:
            return [self.session_dir]
        root = os.path.join(self.agent_dir, "sessions")
        if cwd is not None:
            return [os.path.join(root, encode_cwd(os.path.abspath(cwd)))]
        try:
            return [os.path.join(root, name) for name in sorted(os.listdir(root))]
        except OSError:
            return []

    def resolve(self, ref: str, cwd: str) -> SessionRef:
        """A session argument: a path, or an id / unique id prefix (``listing.resolve_session_ref``)."""
        return resolve_session_ref(ref, os.path.abspath(cwd), self.session_dir, agent_dir=self.agent_dir)

    # -- search ---------------------------------------------------------------------------------

    def search(self, params: t.SearchSessionsParams) -> t.SearchSessionsResult:
        from rpcd.store.search import QueryError, parse_query, sessions_in
        from rpcd.store.search_index import search_sessions

        limit = DEFAULT_LIMIT if params.limit is None else params.limit
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidArgumentError(f"limit must be between 1 and {MAX_LIMIT}", param="limit")
        try:
            query = parse_query(params.query)
        except QueryError as exc:
            raise InvalidArgumentError(str(exc), param="query") from None
        after = _decode_cursor(params.cursor, params.query) if params.cursor is not None else None
        directories = self.directories(params.cwd)
        files = sessions_in(directories)
        cwd = os.path.abspath(params.cwd) if params.cwd is not None else None
        hits: list[t.SearchHit] = []
        more = False
        while True:  # a shared session dir: hits of other projects are left out, page after page
            page = search_sessions(files, query, agent_dir=self.agent_dir, directories=directories, after=after,
                                   limit=limit - len(hits))
            for hit in page.hits:
                if cwd is None or self.session_dir is None or hit.info.cwd == cwd:
                    hits.append(_hit(hit))
            more = page.more
            if not page.hits or not more or len(hits) >= limit:
                break
            after = recency_key(page.hits[-1].info)
        last = hits[-1] if hits else None
        cursor = _encode_cursor(params.query, last.updated_at, last.session_file) if more and last else None
        return t.SearchSessionsResult(results=hits, next_cursor=cursor)

    def forget(self, path: str) -> None:
        from rpcd.store.search_index import forget_session

        forget_session(self.agent_dir, path)

    # -- reading one -----------------------------------------------------------------------------

    def read(self, params: t.ReadSessionParams, cwd: str) -> t.ReadSessionResult:
        from rpcd.store.library import check_session_file
        from rpcd.store.loader import load_file, not_a_session

        if (params.session_file is None) == (params.session_id is None):
            raise InvalidArgumentError("Give exactly one of sessionFile and sessionId", param="sessionFile")
        limit = READ_LIMIT if params.limit is None else params.limit
        if not 1 <= limit <= MAX_READ_LIMIT:
            raise InvalidArgumentError(f"limit must be between 1 and {MAX_READ_LIMIT}", param="limit")
        if params.session_id is not None:
            if not params.session_id.strip() or "/" in params.session_id or "\\" in params.session_id:
                raise InvalidArgumentError("sessionId must be a session id or id prefix", param="sessionId")
            path = self.resolve(params.session_id, cwd).path
        else:
            assert params.session_file is not None
            path = check_session_file(params.session_file)
        path = check_session_file(path)
        if os.path.getsize(path) > MAX_READ_BYTES:
            raise SessionFileTooLargeError(f"Session file over {MAX_READ_BYTES} bytes: {path}", session_path=path)
        loaded = load_file(path)
        if loaded is None:
            raise not_a_session(path)
        entries: list[dict[str, Any]] = []
        for record in loaded.records:
            try:
                entries.append(record.entry)
            except Exception:
                continue
        start = 0
        if params.since is not None:
            index = next((i for i, e in enumerate(entries) if e.get("id") == params.since), None)
            if index is None:
                raise InvalidEntryError(f"Entry not found: {params.since}", entry_id=params.since, session_path=path)
            start = index + 1
        page = entries[start:start + limit]
        more = start + limit < len(entries)
        leaf = entries[-1].get("id") if entries else None
        return t.ReadSessionResult(session_file=path, header=dict(loaded.header), entries=page,
                                   leaf_id=leaf if isinstance(leaf, str) else None,
                                   next_since=str(page[-1].get("id")) if more and page else None)


def _iso(moment: datetime) -> str:
    from datetime import UTC

    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _hit(hit: Any) -> t.SearchHit:
    info = hit.info
    return t.SearchHit(
        session_id=info.id, session_file=info.path, cwd=info.cwd, title=(info.name or info.first_message)[:TITLE_CHARS],
        created_at=_iso(info.created), updated_at=_iso(info.modified), message_count=info.message_count,
        match_count=hit.match_count, name=info.name,
        snippets=[t.SearchSnippet(kind=s.kind, text=s.text, start=s.start, end=s.end, entry_id=s.entry_id)
                  for s in hit.snippets])


def _encode_cursor(query: str, updated_at: str, path: str) -> str:
    return base64.urlsafe_b64encode(json.dumps([query, updated_at, path]).encode()).decode().rstrip("=")


def _decode_cursor(cursor: str, query: str) -> tuple[datetime, str]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if isinstance(raw, list) and len(raw) == 3 and all(isinstance(x, str) for x in raw):
            if raw[0] != query:
                raise InvalidArgumentError("cursor belongs to another query", param="cursor")
            return datetime.fromisoformat(raw[1].replace("Z", "+00:00")), raw[2]
    except (ValueError, TypeError):
        pass
    raise InvalidArgumentError("cursor is not one this daemon issued", param="cursor")
