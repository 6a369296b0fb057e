"""THE session library of every front: where sessions live, and the session files beside the live
ones — list, find by id, rename, delete (to the user's trash, under the writer lock), by path.

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

Both fronts use this one library (the JSON-RPC ``listSessions``/``deleteSession``/``renameSession``,
ACP's ``session/list``/``session/delete`` and its lookups by ``sessionId``): the same session dir, the
same listing and the same delete. Blocking file work: the fronts call it in a worker thread (or
queued on the host, which runs it at its turn).
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, Protocol

import attrs

from rpcd.core.errors import SessionInUseError
from rpcd.runtime.resources.settings import load_settings
from rpcd.runtime.resources.trust import TrustStore
from rpcd.sessions.search import SessionSearch
from rpcd.store.paths import SESSION_DIR_ENV, default_session_dir, expand_path

if TYPE_CHECKING:
    from rpcd.store.listing import SessionInfo as SessionInfo
    from rpcd.store.trash import Removed as Removed

__all__ = ["Journal", "SessionLibrary", "SessionLocation", "SessionSort", "resolve_session_dir"]

SessionSort = Literal["updated", "created"]

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


class Journal(Protocol):
    """The record of the current session a front keeps (the daemon's host journal), repointed
    before a file it names is deleted."""

    def read(self) -> _Record | None: ...

    def write(self, session_file: str | None, cwd: str) -> object: ...


class _Record(Protocol):
    @property
    def session_file(self) -> str | None: ...
    @property
    def cwd(self) -> str: ...


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(os.path.abspath(a)) == os.path.realpath(os.path.abspath(b))


class SessionLibrary:
    """The session files of one agent dir and session location: listing, lookup, rename, delete."""

    def __init__(self, agent_dir: str, location: SessionLocation, journal: Journal | None = None) -> None:
        self.agent_dir = agent_dir
        self.location = location
        self.journal = journal
        self.search = SessionSearch(agent_dir, location.directory)
        """Full-text search, reading and id lookup of the stored sessions (``rpcd.sessions.search``)."""

    @property
    def session_dir(self) -> str | None:
        return self.location.directory

    def list(
        self, cwd: str | None, query: str | None = None, sort: SessionSort = "updated"
    ) -> builtins.list[SessionInfo]:
        """The sessions of ``cwd`` (else of every project), newest first, matching ``query``."""
        # The store's listing and file operations are imported by the first call that needs them:
        # the daemon's first answer does not (the same below).
        from rpcd.store.listing import list_all_sessions, list_sessions, parse_query, session_matches

        if cwd is not None:
            infos = list_sessions(os.path.abspath(cwd), self.session_dir, agent_dir=self.agent_dir, sort=sort)
        else:
            infos = list_all_sessions(self.session_dir, agent_dir=self.agent_dir, sort=sort)
        terms = parse_query(query or "")
        return [info for info in infos if session_matches(info, terms)]

    def find(self, session_id: str, cwd: str | None = None) -> str | None:
        """The file of the session ``session_id``: by Pi's file name (``<time>_<id>.jsonl``) in the
        session dir (default layout: the cwd's project directory first, then every project's), then by
        header, for a file named otherwise (imported). ``None``: no such session."""
        if not session_id or "/" in session_id or session_id.startswith("."):
            return None
        from rpcd.store.loader import read_header

        def header_id(path: str) -> str | None:
            header = read_header(path)
            value = header.get("id") if header is not None else None
            return value if isinstance(value, str) else None

        suffix = f"_{session_id}.jsonl"
        by_header: builtins.list[str] = []
        for directory in self._search_dirs(cwd):
            try:
                names = os.listdir(directory)
            except OSError:
                continue
            for name in names:
                path = os.path.join(directory, name)
                if name.endswith(suffix) and header_id(path) == session_id:
                    return path
                if name.endswith(".jsonl"):
                    by_header.append(path)
        return next((path for path in by_header if header_id(path) == session_id), None)

    def _search_dirs(self, cwd: str | None) -> builtins.list[str]:
        if self.session_dir is not None:
            return [self.session_dir]
        root = os.path.join(self.agent_dir, "sessions")
        try:
            directories = [os.path.join(root, name) for name in sorted(os.listdir(root))]
        except OSError:
            directories = []
        if cwd is not None:
            own = default_session_dir(os.path.abspath(cwd), self.agent_dir)
            directories = [own, *(d for d in directories if d != own)]
        return directories

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

    def delete(self, session_file: str, current_file: str | None = None) -> Removed:
        """Trash ``session_file``: refused for the current session, for anything that is not a session
        in the store, for a file this process has open and for one another rpcd process holds (the
        writer lock); the journal (if any) is repointed first (to its project, without a file) if it
        names the file, so it never names a deleted one."""
        from rpcd.store.library import check_session_file, delete_session_file

        path = check_session_file(session_file)
        if self.is_current(path, current_file):
            raise SessionInUseError(f"Cannot delete the currently active session: {path}", session_path=path)
        if self.journal is not None:
            record = self.journal.read()
            if record is not None and record.session_file is not None and _same_file(record.session_file, path):
                self.journal.write(None, record.cwd)
        removed = delete_session_file(path, self.store_dirs(path))
        self.search.forget(path)  # its text must not outlive it in the search index
        return removed

    def session_path(self, ref: str, cwd: str) -> str:
        """``ref`` as a session file: a path as given, else the session with that id or unique id
        prefix (this project first, then every project)."""
        from rpcd.store.listing import looks_like_path

        if os.path.isabs(ref) or looks_like_path(ref):
            return ref
        return self.search.resolve(ref, cwd).path

    def rename(self, session_file: str, name: str) -> str | None:
        from rpcd.store.library import rename_session_file

        return rename_session_file(session_file, name)
