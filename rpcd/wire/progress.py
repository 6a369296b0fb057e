"""``$/progress`` for long replacements (resume, importJsonl) keyed by the request's ``workDoneToken``.

A reporter with no token is a no-op, so handlers use the same code path whether or not the
client asked. ``end`` is always sent once a ``begin`` went out (also when the operation fails
or is cancelled), so a client's progress UI never hangs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from rpcd.core.progress import percentage
from rpcd.wire.notifications import PROGRESS

Post = Callable[[str, Mapping[str, Any]], None]


class Progress:
    """begin → report* → end for one token (LSP's work-done progress shape)."""

    def __init__(self, post: Post, token: str | int | None, title: str) -> None:
        self._post = post
        self._token = token
        self._title = title
        self._begun = False
        self._ended = False

    @property
    def active(self) -> bool:
        return self._token is not None

    def begin(self, message: str | None = None, percentage: int | None = None) -> None:
        if self._token is None or self._begun:
            return
        self._begun = True
        value: dict[str, Any] = {"kind": "begin", "title": self._title}
        _put(value, message, percentage)
        self._post(PROGRESS, {"token": self._token, "value": value})

    def report(self, message: str | None = None, percentage: int | None = None) -> None:
        if self._token is None or not self._begun or self._ended:
            return
        value: dict[str, Any] = {"kind": "report"}
        _put(value, message, percentage)
        self._post(PROGRESS, {"token": self._token, "value": value})

    def end(self, message: str | None = None) -> None:
        if self._token is None or not self._begun or self._ended:
            return
        self._ended = True
        value: dict[str, Any] = {"kind": "end"}
        if message is not None:
            value["message"] = message
        self._post(PROGRESS, {"token": self._token, "value": value})

    def bytes_reporter(self) -> Callable[[int, int], None] | None:
        """A ``rpcd.core.progress`` reporter for work counted in bytes (an import's copy), or
        ``None`` when the client gave no token (nothing to report to)."""
        if self._token is None:
            return None

        def report(done: int, total: int) -> None:
            self.report(f"{done / 1048576:.1f} of {total / 1048576:.1f} MiB", percentage(done, total))

        return report

    def __enter__(self) -> Progress:
        self.begin()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.end("done")
        else:
            self.end("cancelled" if _is_cancellation(exc) else "failed")


def _put(value: dict[str, Any], message: str | None, percentage: int | None) -> None:
    if message is not None:
        value["message"] = message
    if percentage is not None:
        value["percentage"] = max(0, min(100, percentage))


def _is_cancellation(exc: BaseException | None) -> bool:
    # asyncio's CancelledError is what anyio raises on our backend; no event loop is needed to check it.
    return isinstance(exc, asyncio.CancelledError)
