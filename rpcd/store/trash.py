"""Moving a file to the user's trash, as a desktop's file manager does (Pi runs the ``trash`` CLI).

Linux and the BSDs: the freedesktop.org Trash specification 1.0. The home trash is
``$XDG_DATA_HOME/Trash`` (``~/.local/share/Trash``); a file on another file system goes to that
file system's trash (``$topdir/.Trash/$uid`` when the administrator made ``.Trash`` sticky, else
``$topdir/.Trash-$uid``), and when neither can be used it is copied into the home trash. For
each trashed file, ``info/<name>.trashinfo`` is created first (exclusively, which reserves the
name), then the file is renamed to ``files/<name>``; a name already taken gets ``.2``, ``.3``, ...
before its extension. macOS: renamed into ``~/.Trash``. Where nothing works the file is deleted,
and the result says so (``method: "unlink"``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import sys
import time
import urllib.parse
from typing import Literal

import attrs

from rpcd.store._fs import fsync_dir

__all__ = ["Removed", "home_trash_dir", "move_to_trash"]

_MAX_NAMES = 1000


@attrs.frozen
class Removed:
    """How a file went away: into the trash (``trash_path``: where it is now) or deleted."""

    method: Literal["trash", "unlink"]
    trash_path: str | None = None
    info_path: str | None = None


def home_trash_dir(env: dict[str, str] | None = None) -> str:
    """``$XDG_DATA_HOME/Trash``; an unset or relative ``XDG_DATA_HOME`` means ``~/.local/share``."""
    environ = os.environ if env is None else env
    data_home = environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(data_home):
        data_home = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data_home, "Trash")


def move_to_trash(path: str) -> Removed:
    """Trash ``path`` (a file; a symlink is trashed as the link). Raises ``OSError`` only when the
    file cannot even be deleted (then it is still where it was)."""
    path = os.path.abspath(path)
    info = os.lstat(path)
    if sys.platform == "darwin":
        moved = _macos_trash(path)
        if moved is not None:
            return moved
    elif os.name == "posix":
        moved = _freedesktop_trash(path, info)
        if moved is not None:
            return moved
    os.unlink(path)
    fsync_dir(os.path.dirname(path))
    return Removed("unlink")


# -- freedesktop.org ---------------------------------------------------------------------------


def _freedesktop_trash(path: str, info: os.stat_result) -> Removed | None:
    home = home_trash_dir()
    same_device = _device_of(home) == info.st_dev
    if same_device:
        moved = _into(home, path, None)
        if moved is not None:
            return moved
    topdir = _mount_point(os.path.dirname(path), info.st_dev)
    for candidate in _topdir_trashes(topdir):
        moved = _into(candidate, path, topdir)
        if moved is not None:
            return moved
    return None if same_device else _into(home, path, None, copy=True)


def _into(trash: str, path: str, topdir: str | None, *, copy: bool = False) -> Removed | None:
    """Put ``path`` into ``trash`` (``files/`` + ``info/``); ``None`` if this trash cannot take it.

    ``topdir``: the file system's top directory for a per-volume trash (``Path=`` is relative to
    it there); ``None`` for the home trash (``Path=`` absolute).
    """
    files, infos = os.path.join(trash, "files"), os.path.join(trash, "info")
    try:
        for directory in (trash, files, infos):
            _private_dir(directory)
    except OSError:
        return None
    recorded = os.path.relpath(path, topdir) if topdir is not None else path
    body = (
        "[Trash Info]\n"
        f"Path={urllib.parse.quote(recorded, safe='/')}\n"
        f"DeletionDate={time.strftime('%Y-%m-%dT%H:%M:%S')}\n"
    ).encode()
    for name in _candidate_names(os.path.basename(path)):
        info_path = os.path.join(infos, name + ".trashinfo")
        target = os.path.join(files, name)
        try:
            fd = os.open(info_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
        except FileExistsError:
            continue
        except OSError:
            return None
        try:
            try:
                os.write(fd, body)
                os.fsync(fd)
            finally:
                os.close(fd)
            if os.path.lexists(target):  # a file without its info: the name is taken all the same
                os.unlink(info_path)
                continue
            if copy:
                shutil.copy2(path, target, follow_symlinks=False)
                os.unlink(path)
            else:
                os.rename(path, target)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(info_path)
            if copy:
                with contextlib.suppress(OSError):
                    if os.path.lexists(path):
                        os.unlink(target)
            return None
        fsync_dir(infos)
        fsync_dir(files)
        fsync_dir(os.path.dirname(path))
        return Removed("trash", target, info_path)
    return None


def _candidate_names(base: str) -> list[str]:
    stem, ext = os.path.splitext(base)
    return [base, *(f"{stem}.{n}{ext}" for n in range(2, _MAX_NAMES))]


def _private_dir(directory: str) -> None:
    """Create ``directory`` 0700 if missing; an existing one must be a real directory we own."""
    with contextlib.suppress(FileExistsError):
        os.makedirs(directory, mode=0o700, exist_ok=False)
    info = os.lstat(directory)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise OSError(errno.EPERM, "not a trash directory of this user", directory)


def _topdir_trashes(topdir: str) -> list[str]:
    """The spec's per-volume trashes, in its order: ``$topdir/.Trash/$uid`` (only when ``.Trash`` is a
    sticky directory, not a symlink), then ``$topdir/.Trash-$uid``."""
    uid = str(os.getuid())
    out: list[str] = []
    shared = os.path.join(topdir, ".Trash")
    with contextlib.suppress(OSError):
        info = os.lstat(shared)
        if stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX:
            out.append(os.path.join(shared, uid))
    out.append(os.path.join(topdir, f".Trash-{uid}"))
    return out


def _device_of(path: str) -> int | None:
    """The device of ``path``, or of its nearest existing ancestor (the trash may not exist yet)."""
    current = os.path.abspath(path)
    while True:
        try:
            return os.stat(current).st_dev
        except OSError:
            parent = os.path.dirname(current)
            if parent == current:
                return None
            current = parent


def _mount_point(directory: str, device: int) -> str:
    current = os.path.abspath(directory)
    while True:
        parent = os.path.dirname(current)
        if parent == current:
            return current
        try:
            if os.stat(parent).st_dev != device:
                return current
        except OSError:
            return current
        current = parent


# -- macOS ---------------------------------------------------------------------------------------


def _macos_trash(path: str) -> Removed | None:
    trash = os.path.join(os.path.expanduser("~"), ".Trash")
    if not os.path.isdir(trash):
        return None
    for name in _candidate_names(os.path.basename(path)):
        target = os.path.join(trash, name)
        if os.path.lexists(target):
            continue
        try:
            os.rename(path, target)
        except OSError:
            return None
        return Removed("trash", target)
    return None
