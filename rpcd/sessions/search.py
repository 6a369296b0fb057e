"""Stored sessions beyond the listing: full-text search, reading one without switching to it, and
naming one by id or id prefix — over the directories the session library uses.

Which files: the configured session directory (``--session-dir``, the variable, the setting: it
holds every project's sessions, filtered by each header's cwd), else ``<agentDir>/sessions/*/``
(every project's directory, or the one of ``cwd``). The search goes through the agent dir's index
(``rpcd.store.search_index``: built on first use, then kept current), or reads the files when
SQLite cannot index; a deleted session is dropped from the index at once (``forget``). What it
answers is the store's (``SearchPage``, ``SessionPage``): the fronts put it on their wire.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Final

import attrs

from rpcd.core.errors import InvalidArgumentError, InvalidEntryError, SessionFileTooLargeError
from rpcd.store.paths import encode_cwd

if TYPE_CHECKING:
    from rpcd.store.listing import SessionRef
    from rpcd.store.search import RecencyKey, SearchPage, SessionHit

# The store's listing, search and loader are imported by the request that needs them: the daemon's
# first answer builds this service and uses none of them (``tests/daemon/test_first_answer_imports.py``).

__all__ = ["SessionPage", "SessionSearch"]

MAX_LIMIT: Final = 200
MAX_READ_LIMIT: Final = 10_000
MAX_READ_BYTES: Final = 1 << 30


@attrs.frozen
class SessionPage:
    """Entries of a stored session (``readSession``)."""

    session_file: str
    header: dict[str, Any]
    entries: list[dict[str, Any]]
    leaf_id: str | None
    next_since: str | None


class SessionSearch:
    def __init__(self, agent_dir: str, session_dir: str | None) -> None:
        self.agent_dir = agent_dir
        self.session_dir = session_dir

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
        from rpcd.store.listing import resolve_session_ref

        return resolve_session_ref(ref, os.path.abspath(cwd), self.session_dir, agent_dir=self.agent_dir)

    def search(self, query_text: str, *, cwd: str | None, after: RecencyKey | None, limit: int) -> SearchPage:
        """One page of hits, newest first, after ``after``; ``InvalidArgumentError`` for a query that
        cannot run (``param: "query"``) or a bad limit."""
        from rpcd.store.listing import recency_key
        from rpcd.store.search import QueryError, SearchPage, parse_query, sessions_in
        from rpcd.store.search_index import search_sessions

        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidArgumentError(f"limit must be between 1 and {MAX_LIMIT}", param="limit")
        try:
            query = parse_query(query_text)
        except QueryError as exc:
            raise InvalidArgumentError(str(exc), param="query") from None
        directories = self.directories(cwd)
        files = sessions_in(directories)
        wanted_cwd = os.path.abspath(cwd) if cwd is not None and self.session_dir is not None else None
        hits: list[SessionHit] = []
        while True:  # a shared session dir: other projects' hits are left out, page after page
            page = search_sessions(files, query, agent_dir=self.agent_dir, directories=directories, after=after,
                                   limit=limit - len(hits))
            hits.extend(h for h in page.hits if wanted_cwd is None or h.info.cwd == wanted_cwd)
            if not page.hits or not page.more or len(hits) >= limit:
                return SearchPage(hits, more=page.more)
            after = recency_key(page.hits[-1].info)

    def forget(self, path: str) -> None:
        from rpcd.store.search_index import forget_session

        forget_session(self.agent_dir, path)

    def read(self, *, session_file: str | None, session_id: str | None, since: str | None, limit: int,
             cwd: str) -> SessionPage:
        """A stored session's entries after ``since`` (at most ``limit``), by file or id / unique prefix."""
        from rpcd.store.library import check_session_file
        from rpcd.store.loader import load_file, not_a_session

        if (session_file is None) == (session_id is None):
            raise InvalidArgumentError("Give exactly one of sessionFile and sessionId", param="sessionFile")
        if not 1 <= limit <= MAX_READ_LIMIT:
            raise InvalidArgumentError(f"limit must be between 1 and {MAX_READ_LIMIT}", param="limit")
        if session_id is not None:
            if not session_id.strip() or "/" in session_id or "\\" in session_id:
                raise InvalidArgumentError("sessionId must be a session id or id prefix", param="sessionId")
            path = self.resolve(session_id, cwd).path
        else:
            assert session_file is not None
            path = session_file
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
            except Exception:  # an unparsable line is skipped, as Pi skips it
                continue
        start = 0
        if since is not None:
            index = next((i for i, e in enumerate(entries) if e.get("id") == since), None)
            if index is None:
                raise InvalidEntryError(f"Entry not found: {since}", entry_id=since, session_path=path)
            start = index + 1
        page = entries[start:start + limit]
        more = start + limit < len(entries)
        leaf = entries[-1].get("id") if entries else None
        return SessionPage(session_file=path, header=dict(loaded.header), entries=page,
                           leaf_id=leaf if isinstance(leaf, str) else None,
                           next_since=str(page[-1].get("id")) if more and page else None)
