"""What rpcd remembers of a session beyond its file, by session id (``<agentDir>/rpcd/sessions/<id>.json``).

* A session created and not written yet — Pi writes a session file at its first reply, so a session
  that was never prompted has none: its cwd, so that a client that keeps session ids across
  processes (ACP ``session/resume``, ``session/load``) can open it again; it is recreated empty with
  the same id, exactly what it was.
* Its mode (ACP's session mode: the approval policy), restored when the session is opened again.

Nothing of this goes into the session file: Pi lists every file of a session dir (an empty one as
"(no messages)"), and a mode is rpcd's, not Pi's. One small file per session, replaced atomically
(no read-modify-write of a shared file between processes); a record is removed with its session and
pruned when not written for ``RECORD_TTL_S``. Blocking file work: call it in a worker thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Final

import attrs

from rpcd.core.durable import replace_file
from rpcd.core.files import read_regular

RECORDS_RELATIVE: Final = os.path.join("rpcd", "sessions")
RECORD_TTL_S: Final = 90 * 24 * 3600.0
"""A record untouched this long is pruned (when another record is written)."""
_RECORD_LIMIT: Final = 64 * 1024


@attrs.frozen
class SessionRecord:
    cwd: str
    mode: str | None = None


class SessionRecords:
    def __init__(self, agent_dir: str) -> None:
        self.directory = os.path.join(agent_dir, RECORDS_RELATIVE)

    def _path(self, session_id: str) -> str | None:
        """The record's file; ``None`` for an id that cannot name one (a path separator, a dot file)."""
        if not session_id or "/" in session_id or "\0" in session_id or session_id.startswith("."):
            return None
        return os.path.join(self.directory, f"{session_id}.json")

    def get(self, session_id: str) -> SessionRecord | None:
        path = self._path(session_id)
        if path is None:
            return None
        try:
            data = json.loads(read_regular(path, limit=_RECORD_LIMIT))
        except (OSError, ValueError):
            return None
        cwd, mode = (data.get("cwd"), data.get("mode")) if isinstance(data, dict) else (None, None)
        if not isinstance(cwd, str) or not cwd:
            return None
        return SessionRecord(cwd, mode if isinstance(mode, str) else None)

    def put(self, session_id: str, record: SessionRecord) -> None:
        path = self._path(session_id)
        if path is None:
            return
        os.makedirs(self.directory, mode=0o700, exist_ok=True)
        body = {"cwd": record.cwd, **({"mode": record.mode} if record.mode is not None else {})}
        replace_file(path, json.dumps(body).encode())
        self._prune()

    def remove(self, session_id: str) -> None:
        path = self._path(session_id)
        if path is not None:
            with contextlib.suppress(OSError):
                os.unlink(path)

    def _prune(self) -> None:
        cutoff = time.time() - RECORD_TTL_S
        with contextlib.suppress(OSError), os.scandir(self.directory) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if entry.name.endswith(".json") and entry.stat().st_mtime < cutoff:
                        os.unlink(entry.path)
