"""The host journal: which session file and cwd are current (host-owned persistence, seed §8).

Pi's SessionManager persists the transcript itself; what it does not record is *which*
session a long-running host was serving. The composition root's ``flush_persistence``
writes that here after every successful replacement, and ``--resume-last`` reads it back.

A write is atomic (temp file in the same directory, fsync, rename, fsync of the directory):
a crash leaves either the previous record or the new one, never a torn file. The file is
0600 and a directory we create is 0700 — the record names a user's project paths.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import anyio.to_thread
import attrs

from rpcd.core.durable import create_temporary, fsync_directory, fsync_file
from rpcd.core.errors import SessionWriteError
from rpcd.core.files import read_regular

__all__ = ["JOURNAL_VERSION", "HostJournal", "HostJournalError", "JournalRecord"]

logger = logging.getLogger(__name__)

JOURNAL_VERSION = 1
JOURNAL_MAX_BYTES = 1 << 20
"""A record is a few hundred bytes; anything larger is not ours."""


class HostJournalError(SessionWriteError):
    """The journal could not be written (its directory cannot be created, disk trouble, ...)."""

    kind = "HostJournalError"


PROJECTS_KEPT = 200
"""Projects whose last session the journal remembers (the least recently served are forgotten)."""


@attrs.frozen
class JournalRecord:
    session_file: str | None
    """``None`` for an in-memory session (nothing to resume from)."""
    cwd: str
    written_at: str
    """ISO-8601 UTC, for humans reading the file."""
    projects: Mapping[str, str] = attrs.field(factory=dict)
    """cwd -> the last session file served there (``--resume-last --cwd DIR``), oldest first."""


class HostJournal:
    """One JSON record at ``path``; the last successful ``write`` wins."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def write(self, session_file: str | None, cwd: str) -> JournalRecord:
        """Atomically replace the record. Raises ``HostJournalError`` (paths only, no content)."""
        return self._write(session_file, cwd, self.read())

    def _write(self, session_file: str | None, cwd: str, previous: JournalRecord | None) -> JournalRecord:
        """``write`` over ``previous``, the record just read (the caller read it: not read twice)."""
        projects = dict(previous.projects) if previous is not None else {}
        if session_file is not None:
            projects.pop(cwd, None)
            projects[cwd] = session_file  # the most recent last
            while len(projects) > PROJECTS_KEPT:
                projects.pop(next(iter(projects)))
        record = JournalRecord(
            session_file=session_file,
            cwd=cwd,
            written_at=datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            projects=projects,
        )
        payload = json.dumps(
            {
                "version": JOURNAL_VERSION,
                "sessionFile": record.session_file,
                "cwd": record.cwd,
                "writtenAt": record.written_at,
                "projects": projects,
            },
            ensure_ascii=False,
        ).encode("utf-8") + b"\n"
        directory = self._ensure_directory()
        self._remove_orphaned_temps(directory)
        try:
            fd, temp_name = create_temporary(str(directory), f".{self.path.name}.{os.getpid()}.", ".tmp")
        except OSError as error:
            raise self._error("cannot create a temporary file next to", error) from error
        try:
            with os.fdopen(fd, "wb") as handle:  # owns fd from here on, closes it on every path
                os.fchmod(handle.fileno(), 0o600)
                handle.write(payload)
                handle.flush()
                fsync_file(handle.fileno())
            os.replace(temp_name, self.path)
        except OSError as error:
            with contextlib.suppress(OSError):
                os.unlink(temp_name)
            raise self._error("cannot write", error) from error
        fsync_directory(directory)
        return record

    async def write_async(self, session_file: str | None, cwd: str) -> JournalRecord:
        """``write`` in a worker thread, for ``HostBindings.flush_persistence``."""
        return await anyio.to_thread.run_sync(self.write, session_file, cwd)

    def ensure(self, session_file: str | None, cwd: str) -> JournalRecord:
        """Make the record name ``session_file`` and ``cwd``: ``write`` unless the readable record
        already does (then it is returned as it is: the same paths with a newer ``writtenAt`` are
        no news, and the rename with its two fsyncs was a third of every orderly end). A record
        another process wrote in between names something else and is replaced; an unreadable one
        is rewritten, so a journal that cannot be written still fails closed."""
        current = self.read()
        if current is not None and _names(current, session_file, cwd):
            # what ``write`` would have cleaned up is cleaned up all the same: a daemon that comes back
            # on the record a killed one was rewriting must not keep its orphaned temp file forever
            self._remove_orphaned_temps(self.path.parent)
            return current
        return self._write(session_file, cwd, current)

    def already_current(self, session_file: str | None, cwd: str) -> JournalRecord | None:
        """The record when ``record_current`` would leave it as it is (it names ``cwd`` and
        ``session_file``, which exists), its orphaned temp files cleaned up as ``ensure`` does; else
        ``None``: a write is due. A ``stat`` of the session file, a bounded read of this small file
        and a listing of its directory: cheap enough for the event loop, so a replacement that leaves
        the journal as it is (a resume of the session it names) hands nothing to a worker thread."""
        if session_file is not None and not os.path.isfile(session_file):
            return None
        current = self._read(log=False)  # unreadable: the write reads (and logs) it again
        if not _names(current, session_file, cwd):
            return None
        self._remove_orphaned_temps(self.path.parent)
        return current

    async def ensure_async(self, session_file: str | None, cwd: str) -> JournalRecord:
        """``ensure`` in a worker thread (one hop for the read and the write)."""
        return await anyio.to_thread.run_sync(self.ensure, session_file, cwd)

    def record_current(self, session_file: str | None, cwd: str) -> JournalRecord:
        """Record the session a host now serves (``flush_persistence``): ``ensure`` for a saved
        session; a session whose file does not exist yet (Pi writes it at the first assistant
        message) is never named: naming it would make ``--resume-last`` start afresh. Then the
        previous record is kept — rewritten as it was, so a journal that cannot be written still
        fails closed here — or, with none, only the project is recorded (the final disposal records
        the file once it exists). One call, for one worker thread: the file check, the read and the
        write of one replacement."""
        if session_file is not None and not os.path.isfile(session_file):
            previous = self.read()
            if previous is None:
                return self._write(None, cwd, None)
            return self._write(previous.session_file, previous.cwd, previous)
        return self.ensure(session_file, cwd)

    async def record_current_async(self, session_file: str | None, cwd: str) -> JournalRecord:
        """``record_current`` in a worker thread (one hop per replacement)."""
        return await anyio.to_thread.run_sync(self.record_current, session_file, cwd)

    def read(self) -> JournalRecord | None:
        """The last record, or ``None`` if there is none or it is unreadable (logged, not raised).

        An unreadable journal must not stop a daemon from starting: ``--resume-last`` then
        falls back to a fresh session, which is what a missing journal means too.
        """
        return self._read(log=True)

    def _read(self, *, log: bool) -> JournalRecord | None:
        """``read``; ``log=False``: an unreadable record is not logged (the caller reads again)."""
        try:
            # a FIFO or a device in its place must not hang the startup: regular files only, bounded
            raw = read_regular(str(self.path), JOURNAL_MAX_BYTES)
        except FileNotFoundError:
            return None
        except OSError as error:
            if log:
                logger.warning("host journal %s is unreadable: %s", self.path,
                               error.strerror or type(error).__name__)
            return None
        try:
            data = json.loads(raw)
            session_file = data.get("sessionFile")
            cwd = data["cwd"]
            written_at = data.get("writtenAt", "")
            if not isinstance(cwd, str) or not (session_file is None or isinstance(session_file, str)):
                raise TypeError("unexpected field types")
            raw_projects = data.get("projects")
            projects = {k: v for k, v in raw_projects.items() if isinstance(k, str) and isinstance(v, str)} \
                if isinstance(raw_projects, dict) else {}  # a record an older rpcd wrote has none
        except (ValueError, KeyError, TypeError, AttributeError):
            if log:
                logger.warning("host journal %s is not a valid record; ignoring it", self.path)
            return None
        return JournalRecord(session_file=session_file, cwd=cwd, written_at=str(written_at), projects=projects)

    def _ensure_directory(self) -> Path:
        """Create the parent (0700) if needed; a non-directory in the way is a clear error.

        Permission bits do not stop root, so "cannot create" is checked by what stands there,
        not only by ``mkdir``'s errno.
        """
        directory = self.path.parent
        for ancestor in (directory, *directory.parents):
            if ancestor.exists() and not ancestor.is_dir():
                raise HostJournalError(
                    f"host journal directory {directory} cannot be created: {ancestor} is not a directory",
                    session_path=str(self.path),
                )
            if ancestor.is_dir():
                break
        created = not directory.exists()
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as error:
            raise self._error("cannot create the directory of", error) from error
        if created:
            with contextlib.suppress(OSError):
                directory.chmod(stat.S_IRWXU)
        return directory

    def _remove_orphaned_temps(self, directory: Path) -> None:
        """Remove temp files whose writer died between ``mkstemp`` and ``os.replace`` (kill -9).

        Nothing else would ever remove them, so crashes would accumulate them. A temp file's
        name carries its writer's pid: one of a live process (another daemon sharing this
        agent dir, mid-write) is left alone; a name without a pid predates this scheme.
        """
        prefix = f".{self.path.name}."
        try:
            names = os.listdir(directory)
        except OSError:
            return
        for name in names:
            if not (name.startswith(prefix) and name.endswith(".tmp")):
                continue
            pid = name[len(prefix) :].split(".", 1)[0]
            if pid.isdigit() and _process_alive(int(pid)):
                continue
            with contextlib.suppress(OSError):
                os.unlink(directory / name)

    def _error(self, what: str, error: OSError) -> HostJournalError:
        reason = error.strerror or type(error).__name__
        return HostJournalError(f"host journal: {what} {self.path}: {reason}", session_path=str(self.path))


def _names(record: JournalRecord | None, session_file: str | None, cwd: str) -> bool:
    """``record`` names ``session_file`` in ``cwd`` (and its project's entry does too)."""
    return (record is not None and record.session_file == session_file and record.cwd == cwd
            and (session_file is None or record.projects.get(cwd) == session_file))


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # EPERM: it exists, owned by someone else
    return True
