"""Importing a session file into a session directory without ever overwriting anything.

Pi 0.85.0 copies ``x.jsonl`` to ``x.jsonl``, ``x-1.jsonl``, ``x-2.jsonl``, ... (exclusive
create) and skips the copy when the source already is the destination. We also refuse a
source that is not a session before copying, and ``import_session`` removes its own copy
again when the session's stored cwd is missing (Pi leaves it behind).
"""

from __future__ import annotations

import contextlib
import os

from rpcd.core.errors import MissingSessionCwdError, SessionFileNotFoundError, SessionWriteError
from rpcd.store import _fs
from rpcd.store.loader import not_a_session, read_header
from rpcd.store.manager import SessionManager, assert_session_cwd_exists
from rpcd.store.paths import make_private_dirs

_MAX_SUFFIX = 10_000


def _split_name(name: str) -> tuple[str, str]:
    if name.endswith(".jsonl"):
        return name[: -len(".jsonl")], ".jsonl"
    stem, ext = os.path.splitext(name)
    return stem, ext


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def import_session_file(source: str, session_dir: str) -> tuple[str, bool]:
    """Copy ``source`` into ``session_dir``; returns ``(destination, copied)``.

    Raises ``SessionFileNotFoundError`` (missing source) or ``SessionWriteError``.
    """
    source = os.path.abspath(source)
    if not os.path.isfile(source):
        raise SessionFileNotFoundError(f"File not found: {source}", session_path=source)
    session_dir = os.path.abspath(session_dir)
    stem, ext = _split_name(os.path.basename(source))
    first = os.path.join(session_dir, stem + ext)
    if os.path.exists(first) and _same_file(first, source):
        return first, False
    try:
        make_private_dirs(session_dir)
        with open(source, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise SessionWriteError(f"Could not import session file: {exc.strerror}", session_path=source) from exc
    for suffix in range(_MAX_SUFFIX):
        candidate = first if suffix == 0 else os.path.join(session_dir, f"{stem}-{suffix}{ext}")
        try:
            _fs.create_exclusive(candidate, data)
        except FileExistsError:
            continue
        except OSError as exc:
            raise SessionWriteError(f"Could not import session file: {exc.strerror}", session_path=candidate) from exc
        return candidate, True
    raise SessionWriteError("Could not import session file: no free file name", session_path=first)


def import_session(
    source: str, session_dir: str, cwd_override: str | None = None, *, fallback_cwd: str | None = None
) -> SessionManager:
    """The store side of ``importFromJsonl``: check, copy, open, check the cwd.

    Raises ``NotASessionError`` before copying anything; on ``MissingSessionCwdError`` the
    copy made by this call is removed, so a retry with ``cwd_override`` reuses the name.
    """
    source = os.path.abspath(source)
    if not os.path.isfile(source):
        raise SessionFileNotFoundError(f"File not found: {source}", session_path=source)
    if os.path.getsize(source) > 0 and read_header(source) is None:
        raise not_a_session(source)
    destination, copied = import_session_file(source, session_dir)
    try:
        manager = SessionManager.open(destination, session_dir, cwd_override)
        assert_session_cwd_exists(manager, fallback_cwd if fallback_cwd is not None else os.getcwd())
    except MissingSessionCwdError:
        if copied:
            with contextlib.suppress(OSError):
                os.unlink(destination)
        raise
    return manager
