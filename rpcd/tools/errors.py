"""Tool failures in Pi's words.

A tool that fails raises ``ToolError``; the agent loop turns it into Pi's error result
(``{"content": [{"type": "text", "text": message}], "details": {}}``, ``isError: true``).
Filesystem failures are worded as Node words them, because Pi's tools pass Node's error
message through to the model: ``ENOENT: no such file or directory, open '/p/x'``.
"""

from __future__ import annotations

import errno

# libuv's messages (uv_strerror), which Node puts in ``err.message``; they differ from glibc's.
_UV_MESSAGES: dict[int, str] = {
    errno.ENOENT: "no such file or directory",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EISDIR: "illegal operation on a directory",
    errno.ENOTDIR: "not a directory",
    errno.ELOOP: "too many symbolic links encountered",
    errno.EEXIST: "file already exists",
    errno.ENAMETOOLONG: "name too long",
    errno.ENOSPC: "no space left on device",
    errno.EROFS: "read-only file system",
    errno.EMFILE: "too many open files",
    errno.ENFILE: "file table overflow",
    errno.EBUSY: "resource busy or locked",
    errno.EINVAL: "invalid argument",
    errno.EIO: "i/o error",
    errno.EFBIG: "file too large",
    errno.ENOTEMPTY: "directory not empty",
    errno.EXDEV: "cross-device link not permitted",
    errno.ETXTBSY: "text file is busy",
    errno.EAGAIN: "resource temporarily unavailable",
    errno.ENXIO: "no such device or address",
    errno.ENODEV: "no such device",
    errno.EDQUOT: "disk quota exceeded" if hasattr(errno, "EDQUOT") else "",
}


class ToolError(Exception):
    """A tool's failure; ``str(exc)`` is the text the model reads."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


def errno_code(exc: OSError) -> str:
    """``err.code`` as Node names it (``ENOENT``); ``EUNKNOWN`` when there is no errno."""
    if exc.errno is None:
        return "EUNKNOWN"
    return errno.errorcode.get(exc.errno, "EUNKNOWN")


def node_message(exc: OSError, syscall: str, path: str | None = None) -> str:
    """Node's ``err.message`` for a failed ``syscall``: ``CODE: description, syscall 'path'``."""
    code = errno_code(exc)
    description = _UV_MESSAGES.get(exc.errno or -1) or (exc.strerror or "unknown error").lower()
    where = f"{syscall} '{path}'" if path is not None else syscall
    return f"{code}: {description}, {where}"


def node_error(exc: OSError, syscall: str, path: str | None = None) -> ToolError:
    return ToolError(node_message(exc, syscall, path))


def not_a_regular_file(path: str) -> ToolError:
    """A FIFO, socket or device where a tool reads or writes a file: refused, never opened for a blocking
    read or write (Pi would block on a FIFO, or read a device without end: docs/pi-compat.md)."""
    return ToolError(f"Not a regular file: {path}")
