"""Content-addressed blobs: ``<store>/blobs/ab/cdef…`` named by the SHA-256 of their content.

A blob is written once (a temp file renamed into place, 0600, zlib-compressed) and never
changed; reading one checks its hash, so a blob damaged on disk (a crash between the write and
the rename reaching the disk) is reported as missing, never restored as wrong bytes. Files are
read through ``rpcd.core.files``: a FIFO or a device is never opened.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import zlib
from typing import Final

from rpcd.core.durable import create_temporary
from rpcd.core.files import read_regular
from rpcd.store.paths import make_private_dirs

__all__ = ["BlobStore", "DamagedBlobError"]

_LEVEL: Final = 1


class DamagedBlobError(OSError):
    """A blob that is missing or whose content no longer matches its name."""


class BlobStore:
    def __init__(self, directory: str) -> None:
        self.directory = directory

    def _path(self, oid: str) -> str:
        return os.path.join(self.directory, oid[:2], oid[2:])

    def has(self, oid: str) -> bool:
        return os.path.exists(self._path(oid))

    def put(self, data: bytes) -> str:
        """Store ``data`` (if not stored yet); its oid."""
        oid = hashlib.sha256(data).hexdigest()
        path = self._path(oid)
        if os.path.exists(path):
            return oid
        parent = os.path.dirname(path)
        make_private_dirs(parent)
        fd, tmp = create_temporary(parent, ".blob-", "")
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(zlib.compress(data, _LEVEL))
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return oid

    def put_file(self, path: str, limit: int) -> tuple[str, int]:
        """Store the regular file ``path`` (at most ``limit`` bytes: ``FileTooLargeError`` beyond);
        its oid and size."""
        data = read_regular(path, limit)
        return self.put(data), len(data)

    def get(self, oid: str) -> bytes:
        try:
            with open(self._path(oid), "rb") as blob:
                data = zlib.decompress(blob.read())
        except (OSError, zlib.error) as exc:
            raise DamagedBlobError(f"snapshot content {oid[:12]} is missing or damaged") from exc
        if hashlib.sha256(data).hexdigest() != oid:
            raise DamagedBlobError(f"snapshot content {oid[:12]} is damaged")
        return data

    def oids(self) -> list[tuple[str, int, float]]:
        """Every stored blob: (oid, bytes on disk, mtime)."""
        found: list[tuple[str, int, float]] = []
        try:
            prefixes = os.listdir(self.directory)
        except OSError:
            return found
        for prefix in prefixes:
            folder = os.path.join(self.directory, prefix)
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                if name.startswith("."):
                    continue
                with contextlib.suppress(OSError):
                    info = os.stat(os.path.join(folder, name))
                    found.append((prefix + name, info.st_size, info.st_mtime))
        return found

    def remove(self, oid: str) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self._path(oid))
