"""The daemon's session library: where sessions live, and the files beside the current session.

Where sessions live is decided once, at start, as Pi decides it (``main.js``, docs/settings.md):
``--session-dir``, else ``$PI_CODING_AGENT_SESSION_DIR``, else the ``sessionDir`` setting (the
global ``<agentDir>/settings.json``, overridden by the startup project's ``.pi/settings.json`` when
that project is trusted by a saved decision), else each project's default directory
``<agentDir>/sessions/--<cwd>--/``. ``~`` is the home directory; a relative path is taken from the
directory rpcd was started in (the flag and the variable) or from the startup cwd (the setting),
as Pi takes them from its process cwd. A configured directory holds every project's sessions, as
in Pi: listings filter it by each header's cwd.

Deviation from Pi: Pi reads the project's ``sessionDir`` before it has asked whether the project
may configure anything; rpcd honours it only for a project already trusted (a repository must not
decide where the user's transcripts are written). docs/pi-compat.md.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import attrs

from rpcd.core.errors import SessionInUseError
from rpcd.daemon.journal import HostJournal
from rpcd.protocol import types as t
from rpcd.runtime.resources.settings import load_settings
from rpcd.runtime.resources.trust import TrustStore
from rpcd.store.paths import SESSION_DIR_ENV, expand_path

if TYPE_CHECKING:
    from rpcd.store.listing import SessionInfo

__all__ = ["SessionLibrary", "SessionLocation", "resolve_session_dir"]

SESSION_DIR_SETTING = "sessionDir"


@attrs.frozen
class SessionLocation:
    """``directory``: the configured session dir (``None``: per-project default dirs); ``source``
    names where it came from (``--session-dir``, the variable, ``settings``, ``default``)."""

    directory: str | None
    source: str


def resolve_session_dir(
    flag: str | None,
    *,
    cwd: str,
    agent_dir: str,
    env: Mapping[str, str] | None = None,
    process_cwd: str | None = None,
) -> SessionLocation:
    """Pi's precedence: ``--session-dir`` > ``PI_CODING_AGENT_SESSION_DIR`` > setting ``sessionDir``."""
    environ = os.environ if env is None else env
    started_in = process_cwd if process_cwd is not None else os.getcwd()
    if flag:
        return SessionLocation(expand_path(flag, started_in), "--session-dir")
    from_env = environ.get(SESSION_DIR_ENV)
    if from_env:
        return SessionLocation(expand_path(from_env, started_in), SESSION_DIR_ENV)
    trusted = TrustStore(agent_dir).lookup(cwd) is True
    setting = load_settings(cwd, agent_dir, project_trusted=trusted).get(SESSION_DIR_SETTING)
    if isinstance(setting, str) and setting:
        return SessionLocation(expand_path(setting, cwd), "settings")
    return SessionLocation(None, "default")


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def summary(info: SessionInfo) -> t.SessionSummary:
    return t.SessionSummary(
        session_id=info.id,
        session_file=info.path,
        cwd=info.cwd,
        title=(info.name or info.first_message)[:200],
        created_at=_iso(info.created),
        updated_at=_iso(info.modified),
        message_count=info.message_count,
        parent_session=info.parent_session_path,
    )


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(os.path.abspath(a)) == os.path.realpath(os.path.abspath(b))


class SessionLibrary:
    """``rpcd.wire.handlers.SessionLibrary`` for the daemon: listing, rename and delete of session files."""

    def __init__(self, agent_dir: str, location: SessionLocation, journal: HostJournal) -> None:
        self.agent_dir = agent_dir
        self.location = location
        self.journal = journal

    @property
    def session_dir(self) -> str | None:
        return self.location.directory

    def list(self, cwd: str | None, query: str | None, sort: t.SessionSort) -> builtins.list[t.SessionSummary]:
        # The store's listing and file operations are imported by the first call that needs them:
        # the daemon's first answer does not (the same below).
        from rpcd.store.listing import list_all_sessions, list_sessions, parse_query, session_matches

        if cwd is not None:
            infos = list_sessions(os.path.abspath(cwd), self.session_dir, agent_dir=self.agent_dir, sort=sort)
        else:
            infos = list_all_sessions(self.session_dir, agent_dir=self.agent_dir, sort=sort)
        terms = parse_query(query or "")
        return [summary(info) for info in infos if session_matches(info, terms)]

    def is_current(self, session_file: str, current_file: str | None) -> bool:
        return current_file is not None and _same_file(session_file, current_file)

    def store_dirs(self, path: str) -> builtins.list[str]:
        """The session-store directories ``path`` may be deleted from: the configured session dir,
        or (default layout) a project directory directly under ``<agentDir>/sessions``."""
        if self.session_dir is not None:
            return [self.session_dir]
        root = os.path.realpath(os.path.join(self.agent_dir, "sessions"))
        parent = os.path.realpath(os.path.dirname(os.path.abspath(path)))
        return [parent] if os.path.dirname(parent) == root else [os.path.join(self.agent_dir, "sessions", "*")]

    def delete(self, session_file: str, current_file: str | None) -> t.DeleteSessionResult:
        """Trash ``session_file``: refused for the current session, for anything that is not a session
        in the store, and for a file another rpcd process holds; the host journal is repointed first
        (to its project, without a file) if it names the file, so it never names a deleted one."""
        from rpcd.store.library import check_session_file, delete_session_file

        path = check_session_file(session_file)
        if self.is_current(path, current_file):
            raise SessionInUseError(f"Cannot delete the currently active session: {path}", session_path=path)
        record = self.journal.read()
        if record is not None and record.session_file is not None and _same_file(record.session_file, path):
            self.journal.write(None, record.cwd)
        removed = delete_session_file(path, self.store_dirs(path))
        return t.DeleteSessionResult(method=removed.method, trash_path=removed.trash_path)

    def rename(self, session_file: str, name: str) -> str | None:
        from rpcd.store.library import rename_session_file

        return rename_session_file(session_file, name)
