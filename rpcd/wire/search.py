"""Wire handlers of stored sessions beyond the listing: ``searchSessions`` (full text, Pi's picker
query syntax) and ``readSession`` (a stored session's entries, without switching to it).

Both read files of the session store, not the current session, so they do not queue behind
replacements (like ``listSessions``); they wait for startup and fail closed once the host is
unusable. The work is the daemon's ``SessionSearch`` (which knows where sessions live), run in a
worker thread.
"""

from __future__ import annotations

from typing import Protocol

import anyio

from rpcd.host.host import SerializedHost
from rpcd.protocol import types as t
from rpcd.wire.handlers import host_usable


class SessionSearch(Protocol):
    def search(self, params: t.SearchSessionsParams) -> t.SearchSessionsResult: ...
    def read(self, params: t.ReadSessionParams, cwd: str) -> t.ReadSessionResult: ...


class SearchMethods:
    def __init__(self, host: SerializedHost, search: SessionSearch) -> None:
        self._host = host
        self._search = search

    async def search_sessions(self, params: t.SearchSessionsParams) -> t.SearchSessionsResult:
        await host_usable(self._host)
        return await anyio.to_thread.run_sync(self._search.search, params)

    async def read_session(self, params: t.ReadSessionParams) -> t.ReadSessionResult:
        await host_usable(self._host)
        cwd = self._host.state().cwd  # an id prefix is looked up in this project first
        return await anyio.to_thread.run_sync(self._search.read, params, cwd)
