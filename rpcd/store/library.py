"""Session files as a library: check, rename, delete, export — on any session file, not only the current.

Every operation refuses bad input before it touches anything: a path that is not a regular file
holding a Pi session header is ``NotASessionError`` / ``SessionFileNotFoundError``; a name that is
empty once trimmed as JavaScript trims is ``InvalidArgumentError``; an output path that exists is
never overwritten. Writes to a session file go through ``SessionManager`` (the writer lock, then
the identity check before the append), so a file another rpcd process holds is refused with
``SessionLockedError`` and nothing is written.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from rpcd.core.errors import InvalidArgumentError, SessionInUseError, SessionWriteError
from rpcd.store import _fs, codec, writer_lock
from rpcd.store import entries as E
from rpcd.store._ids import iso_now
from rpcd.store.importing import check_import_source, starts_with_session_header
from rpcd.store.loader import not_a_session
from rpcd.store.manager import SessionManager
from rpcd.store.trash import Removed, move_to_trash

__all__ = [
    "check_output_path",
    "check_session_file",
    "delete_session_file",
    "export_branch_jsonl",
    "in_session_store",
    "rename_session_file",
    "session_name_or_refuse",
    "unused_path",
    "write_new_file",
]

def check_session_file(path: str, *, param: str = "sessionFile") -> str:
    """``path`` (absolute) if it names an existing regular file whose first JSON line is a session
    header; else ``InvalidArgumentError`` (relative path), ``SessionFileNotFoundError`` or
    ``NotASessionError`` (a directory, a FIFO, an empty file, anything without a header)."""
    if not os.path.isabs(path):
        raise InvalidArgumentError(f"{param} must be an absolute path: {path}", param=param)
    path = check_import_source(path)
    if not starts_with_session_header(path):
        raise not_a_session(path)
    return path


def session_name_or_refuse(name: str, *, session_path: str | None = None) -> str:
    """Pi's rpc/picker rule: the name trimmed as JavaScript's ``trim()``; empty is refused."""
    trimmed = E.js_trim(name)
    if not trimmed:
        raise InvalidArgumentError("Session name cannot be empty", param="name", session_path=session_path)
    return trimmed


def rename_session_file(path: str, name: str) -> str | None:
    """Append Pi's ``session_info`` entry to the session file at ``path`` (Pi's picker rename:
    ``SessionManager.open(path).appendSessionInfo(name)``); returns the name the file now has.

    The file is checked (a session, not just any file), the name validated, the writer lock taken
    (``SessionLockedError`` if another rpcd process holds the file), then the entry is appended
    after the file's last entry with the identity check. Nothing is written on any refusal.
    """
    path = check_session_file(path)
    trimmed = session_name_or_refuse(name, session_path=path)
    manager = SessionManager.open(path, must_exist=True)
    try:
        manager.append_session_info(trimmed)
        return manager.get_session_name()
    finally:
        manager.close()


def in_session_store(path: str, store_dirs: Sequence[str]) -> bool:
    """Whether ``path`` lies directly in one of ``store_dirs`` (compared with symlinks resolved)."""
    directory = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    return any(directory == os.path.realpath(os.path.abspath(d)) for d in store_dirs)


def delete_session_file(path: str, store_dirs: Sequence[str]) -> Removed:
    """Move the session file at ``path`` to the user's trash (else delete it).

    Refused, with nothing moved: a relative path, a missing file, anything that is not a session,
    a file outside ``store_dirs`` (the directories where this daemon keeps sessions: a session-shaped
    file elsewhere belongs to a project and is not the library's to delete), a file this process is
    using (``SessionInUseError``) and one another rpcd process holds (``SessionLockedError``).
    """
    path = check_session_file(path)
    if not in_session_store(path, store_dirs):
        raise InvalidArgumentError(
            f"Not a file of the session store ({', '.join(store_dirs) or 'none'}): {path}", param="sessionFile",
            session_path=path,
        )
    if writer_lock.held_here(path):
        raise SessionInUseError(f"Session file is in use by this rpcd process: {path}", session_path=path)
    lock = writer_lock.acquire(path)
    try:
        try:
            return move_to_trash(path)
        except OSError as exc:
            raise SessionWriteError(
                f"Could not delete session file: {exc.strerror or type(exc).__name__}", session_path=path
            ) from exc
    finally:
        if lock is not None:
            lock.release()


# -- export ------------------------------------------------------------------------------------------


def check_output_path(path: str, *, param: str = "outputPath") -> str:
    """An absolute path that does not exist yet, in an existing directory; else ``InvalidArgumentError``."""
    if not os.path.isabs(path):
        raise InvalidArgumentError(f"{param} must be an absolute path: {path}", param=param)
    path = os.path.normpath(path)
    if os.path.lexists(path):
        kind = "a directory" if os.path.isdir(path) else "a file"
        raise InvalidArgumentError(f"{param} already exists ({kind}); it is never overwritten: {path}", param=param)
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise InvalidArgumentError(f"{param}: directory does not exist: {parent}", param=param)
    return path


def unused_path(directory: str, stem: str, ext: str) -> str:
    """``<directory>/<stem><ext>``, else ``<stem>-1<ext>``, ``<stem>-2<ext>``, ... (never an existing name)."""
    candidate = os.path.join(directory, stem + ext)
    n = 0
    while os.path.lexists(candidate):
        n += 1
        candidate = os.path.join(directory, f"{stem}-{n}{ext}")
    return candidate


def write_new_file(path: str, data: bytes, *, param: str = "outputPath") -> str:
    """Create ``path`` (0600, exclusive) with ``data``, durably; a file that appeared meanwhile is
    not overwritten (``InvalidArgumentError``), a failed write leaves nothing behind."""
    try:
        _fs.create_exclusive(path, data)
    except FileExistsError:
        raise InvalidArgumentError(f"{param} already exists; it is never overwritten: {path}", param=param) from None
    except OSError as exc:
        raise SessionWriteError(
            f"Could not write {path}: {exc.strerror or type(exc).__name__}", session_path=path
        ) from exc
    return path


def export_branch_jsonl(manager: SessionManager, output_path: str) -> str:
    """Pi's ``exportSessionToJsonl``: the current branch as a standalone session file at ``output_path``.

    A fresh header (``type``, ``version``, the session's ``id``, now, its ``cwd``; no ``parentSession``)
    and every entry of root -> leaf with ``parentId`` re-chained to the entry before it, each line as
    ``JSON.stringify`` writes it. Unlike Pi, an existing file is never overwritten.
    """
    path = check_output_path(output_path)
    header = E.header(manager.get_session_id(), iso_now(), manager.get_cwd())
    lines = [codec.dumps(header)]
    parent: object = None
    for entry in manager.get_branch():
        lines.append(codec.dumps({**entry, "parentId": parent}))
        parent = entry.get("id")
    return write_new_file(path, b"\n".join(lines) + b"\n")
