"""``<agentDir>/auth.json`` written as Pi writes it (pi-coding-agent ``auth-storage``): one entry per
provider id, ``JSON.stringify(data, null, 2)``, every change made under Pi's lock (``rpcd.core.lockdir``:
the ``auth.json.lock`` directory) after re-reading the file, so a refresh by Pi and one by rpcd never
undo each other, and an entry is only replaced by the flow that owns it.

Differences that only make it safer: rpcd replaces the file atomically (a temporary file in the
same directory, renamed over it, keeping the file's mode — 0600 when it is created, as Pi creates it
— and following a symlink to where the file really is), so a crash never leaves a torn file; Pi
truncates and rewrites in place. A read that finds a half-written file (Pi's in-place write seen
without the lock) reads again under the lock.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from rpcd.core import lockdir
from rpcd.core.durable import fsync_directory
from rpcd.core.files import read_regular

AUTH_FILE: Final = "auth.json"
READ_LIMIT: Final = 4 << 20
READ_STALE: Final = 10.0
"""Pi's synchronous readers take the lock with proper-lockfile's default staleness (10 s)."""

Entry = dict[str, Any]
Update = Callable[[Entry | None], Awaitable[Entry | None]]
"""Given the provider's current entry, the new one (``None``: leave the file as it is)."""


class AuthFileError(OSError):
    """auth.json cannot be read or written (the message names the file, never a value)."""


def dumps(data: Mapping[str, Any]) -> str:
    """``JSON.stringify(data, null, 2)`` for the JSON values an auth file holds."""
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)


def revision(path: str) -> tuple[int, int, int, int, int] | None:
    """Pi's ``getFileRevision``: changes whenever the file is replaced or rewritten."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _copy(data: Mapping[str, Any]) -> dict[str, Any]:
    copied: dict[str, Any] = json.loads(json.dumps(data))
    return copied


class AuthFile:
    """One auth.json; cheap to create (nothing is read until asked)."""

    def __init__(self, path: str) -> None:
        self.path = os.path.abspath(path)
        self._data: dict[str, Any] = {}
        self._revision: tuple[int, int, int, int, int] | None = None

    @classmethod
    def in_dir(cls, agent_dir: str) -> AuthFile:
        return cls(os.path.join(agent_dir, AUTH_FILE))

    # -- reading ---------------------------------------------------------------------------

    def _parse(self, raw: bytes) -> dict[str, Any]:
        text = raw.decode("utf-8-sig")
        if not text.strip():
            return {}
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("expected an object")
        return data

    def read(self) -> dict[str, Any]:
        """The whole file (a copy), re-read only when it changed. ``AuthFileError`` when it is not
        JSON even when read under the lock."""
        current = revision(self.path)
        if current is None:
            self._data, self._revision = {}, None
            return {}
        if current == self._revision:
            return _copy(self._data)
        try:
            data = self._parse(read_regular(self.path, READ_LIMIT))
        except FileNotFoundError:
            return {}
        except (ValueError, UnicodeDecodeError):
            data = self._read_locked()  # maybe Pi's in-place write, half done: read it under the lock
        except OSError as exc:
            raise AuthFileError(exc.errno or 0, f"Could not read {self.path}") from None
        self._data, self._revision = data, current
        return _copy(data)

    def _read_locked(self) -> dict[str, Any]:
        try:
            with lockdir.hold(self.path, stale=READ_STALE, wait=lockdir.DEFAULT_STALE):
                return self._parse(read_regular(self.path, READ_LIMIT))
        except FileNotFoundError:
            return {}
        except (ValueError, UnicodeDecodeError):
            raise AuthFileError(0, f"Invalid JSON in {self.path}") from None
        except OSError as exc:
            raise AuthFileError(exc.errno or 0, f"Could not read {self.path}") from None

    def entry(self, provider: str) -> Entry | None:
        value = self.read().get(provider)
        return value if isinstance(value, dict) else None

    # -- changing --------------------------------------------------------------------------

    async def modify(self, provider: str, update: Update) -> Entry | None:
        """Pi's ``AuthStorage.modify``: under the lock, re-read, ask ``update`` for the provider's
        new entry, write the whole file back with only that entry changed. Answers the entry now
        stored (the new one, or the current one when ``update`` returned ``None``)."""
        self._ensure_file()
        try:
            async with lockdir.hold_async(self.path) as held:
                data = self._read_under_lock()
                current = data.get(provider)
                new = await update(current if isinstance(current, dict) else None)
                if new is None:
                    return current if isinstance(current, dict) else None
                held.check()  # the lock is still ours: nobody else wrote meanwhile
                self._write({**data, provider: new})
                return new
        except lockdir.LockHeldError:
            raise AuthFileError(0, f"{self.path} is locked by another process (Pi?) for too long") from None
        except lockdir.LockCompromisedError:
            raise AuthFileError(0, f"the lock on {self.path} was taken by another process; nothing was "
                                   "written") from None

    async def delete(self, provider: str) -> bool:
        """Remove the provider's entry (logout); ``False`` when there was none."""
        if revision(self.path) is None:
            return False
        removed = False
        try:
            async with lockdir.hold_async(self.path) as held:
                data = self._read_under_lock()
                if provider in data:
                    removed = True
                    del data[provider]
                    held.check()
                    self._write(data)
        except lockdir.LockHeldError:
            raise AuthFileError(0, f"{self.path} is locked by another process (Pi?) for too long") from None
        except lockdir.LockCompromisedError:
            raise AuthFileError(0, f"the lock on {self.path} was taken by another process; nothing was "
                                   "written") from None
        return removed

    def _read_under_lock(self) -> dict[str, Any]:
        try:
            return self._parse(read_regular(self.path, READ_LIMIT))
        except FileNotFoundError:
            return {}
        except (ValueError, UnicodeDecodeError):
            raise AuthFileError(0, f"Invalid JSON in {self.path}; it was not changed") from None

    def _ensure_file(self) -> None:
        """Pi's ``ensureParentDir`` (0700) and ``ensureFileExists`` (``{}``, 0600)."""
        directory = os.path.dirname(self.path)
        os.makedirs(directory, mode=0o700, exist_ok=True)
        if not os.path.lexists(self.path):
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                return
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write("{}")

    def _write(self, data: Mapping[str, Any]) -> None:
        target = os.path.realpath(self.path)  # a symlinked auth.json stays a symlink
        directory = os.path.dirname(target)
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode = 0o600
        tmp = os.path.join(directory, f".{os.path.basename(target)}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(dumps(data))
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        fsync_directory(directory)
        self._data = _copy(data)
        self._revision = revision(self.path)
