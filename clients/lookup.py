"""Finding a session by what a person types: a file, or an id or its first characters.

Pi's ``--session <path|id>`` rule: a path has a separator or ends ``.jsonl``; anything else is a
session id, matched exactly or as a prefix among this project's sessions first, then every
project's (``listSessions``). Where Pi takes the first of several sessions sharing a prefix, this
says which there are; copies of one session (an import of it) count once, the newest.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from rpcd.clients.errors import ClientError

if TYPE_CHECKING:
    from rpcd.clients.client import RpcdClient


class UsageError(ClientError):
    """A usage error found once the daemon could be asked (an unknown session id): exit 2."""


def looks_like_path(text: str) -> bool:
    """Pi's rule for ``--session``: a path has a separator or ends ``.jsonl``; anything else is an id."""
    return "/" in text or "\\" in text or text.endswith(".jsonl") or text.startswith("~") or os.path.exists(text)


def absolute(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))


async def find_session(client: RpcdClient, given: str, cwd: str | None) -> str:
    """The session file ``given`` names (see the module docstring); :class:`UsageError` if none."""
    if looks_like_path(given):
        return absolute(given)
    for scope in ([cwd] if cwd else []) + [None]:
        sessions: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            page = await client.list_sessions(cwd=scope, cursor=cursor, limit=500)
            sessions += [dict(s) for s in page.get("sessions") or []]
            cursor = page.get("nextCursor")
            if not cursor:
                break
        exact = [s for s in sessions if s.get("sessionId") == given]
        found = exact or [s for s in sessions if str(s.get("sessionId", "")).startswith(given)]
        if len({s.get("sessionId") for s in found}) == 1:  # one session (copies of it: the newest)
            return str(found[0]["sessionFile"])
        if len(found) > 1:
            from rpcd.clients.render import short

            listing = "\n".join(f"  {s['sessionId']}  {short(s.get('title', ''), 40)}  {s.get('cwd')}"
                                for s in found[:10])
            raise UsageError(f"session id {given!r} is ambiguous ({len(found)} sessions start with it); "
                             f"give more characters:\n{listing}")
    raise UsageError(f"no session has an id starting with {given!r} (`rpcctl sessions --all` lists them)")
