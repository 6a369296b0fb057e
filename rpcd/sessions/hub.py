"""The hub of live hosts: every front's sessions by id, one host per session file.

An entry is what a front keeps for one live session (the ACP front: its ``AcpSession``; the JSON-RPC
daemon: its one host). The hub owns the bookkeeping both need: which file is held by which entry
(a second host for a held file is refused), a lookup that waits for an open of the same id already
under way (concurrent ``session/load`` of one id share one host), and the daemon's *current* session,
which is a pointer to one entry. The fronts decide how a refusal is worded on their wire.

``dispose_bounded`` is the one orderly-end bound of a host's final disposal (``--exit-timeout``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Generic, TypeVar

import anyio

from rpcd.core.errors import RpcdError
from rpcd.core.redact import redact_and_cut
from rpcd.host.failures import context_of
from rpcd.host.host import SerializedHost

__all__ = ["DisposalTimeout", "FileHeld", "SessionHub", "dispose_bounded", "log_failure"]

log = logging.getLogger("rpcd.app")

E = TypeVar("E")


class FileHeld(Exception):
    """The session file is already open in the live session ``owner``."""

    def __init__(self, path: str, owner: str) -> None:
        super().__init__(f"The session file is already open in session {owner}")
        self.path = path
        self.owner = owner


class DisposalTimeout(RpcdError):
    """The final disposal did not end in time (e.g. an extension handler that never returns)."""

    kind = "DisposalTimeout"


def _file_key(path: str | None) -> str | None:
    return os.path.realpath(path) if path is not None else None


class SessionHub(Generic[E]):
    """Live sessions by id; the file each holds; the current one."""

    def __init__(self) -> None:
        self._entries: dict[str, E] = {}
        self._files: dict[str, str] = {}
        """Real path of a live session's file -> its id (one host per file)."""
        self._opening: dict[str, anyio.Event] = {}
        self.current: str | None = None
        """The id of the current session (the JSON-RPC daemon's one session); ``None``: none."""

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._entries

    def __iter__(self) -> Iterator[E]:
        return iter(list(self._entries.values()))

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, session_id: str) -> E | None:
        return self._entries.get(session_id)

    def ids(self) -> list[str]:
        return list(self._entries)

    def current_entry(self) -> E | None:
        return self._entries.get(self.current) if self.current is not None else None

    def put(self, session_id: str, entry: E, *, current: bool = False) -> None:
        """Register an entry that guards its own files (the daemon's host: every session it opens takes
        the file's writer lock)."""
        self._entries[session_id] = entry
        if current:
            self.current = session_id

    async def add(self, session_id: str, session_file: str | None, build: Callable[[], Awaitable[E]],
                  *, current: bool = False) -> E:
        """Register the entry ``build()`` makes for ``session_id``, holding ``session_file``; a file
        another live entry holds is refused (``FileHeld``) before anything is built, and a failed
        build leaves nothing registered."""
        key = _file_key(session_file)
        if key is not None and key in self._files:
            raise FileHeld(session_file or "", self._files[key])
        if key is not None:
            self._files[key] = session_id
        try:
            entry = await build()
        except BaseException:
            if key is not None and self._files.get(key) == session_id:
                del self._files[key]
            raise
        self._entries[session_id] = entry
        if current:
            self.current = session_id
        return entry

    async def get_or_open(self, session_id: str, open_: Callable[[], Awaitable[E]]) -> E:
        """The live entry ``session_id``, else the one ``open_()`` registers; a concurrent call for
        the same id waits for the first and gets its entry."""
        while (pending := self._opening.get(session_id)) is not None:
            await pending.wait()
        live = self._entries.get(session_id)
        if live is not None:
            return live
        done = self._opening[session_id] = anyio.Event()
        try:
            return await open_()
        finally:
            del self._opening[session_id]
            done.set()

    def refile(self, session_id: str, session_file: str | None) -> None:
        """The live entry ``session_id`` now holds ``session_file`` (its host replaced its session)."""
        self._release_files(session_id)
        key = _file_key(session_file)
        if key is not None:
            self._files[key] = session_id

    def remove(self, session_id: str) -> E | None:
        """Forget the entry (its files are free again); the caller closes it."""
        entry = self._entries.pop(session_id, None)
        self._release_files(session_id)
        if self.current == session_id:
            self.current = None
        return entry

    def _release_files(self, session_id: str) -> None:
        for key, owner in list(self._files.items()):
            if owner == session_id:
                del self._files[key]


async def dispose_bounded(host: SerializedHost, timeout: float) -> None:
    """The final disposal of ``host`` (queued behind its in-flight operation, or the one already
    requested), waited for at most ``timeout`` seconds: raises ``DisposalTimeout`` when it does not
    end in time, else the disposal's own failure (flat)."""
    disposal = host.disposal or host.request_disposal()
    with anyio.move_on_after(timeout) as bounded:
        await disposal.wait_settled()
    if bounded.cancelled_caught:
        raise DisposalTimeout(f"the final disposal did not finish within {timeout:g}s")
    disposal.result()


def log_failure(message: str, exc: BaseException, logger: logging.Logger = log) -> None:
    """One flat log record: operation, phase, target and each failure's type + short text (both fronts)."""
    members = list(exc.exceptions) if isinstance(exc, BaseExceptionGroup) else [exc]
    context = context_of(exc) or context_of(members[0])

    def text(failure: BaseException) -> str:
        # Our own failures never quote transcript text; a foreign exception's text might (debug only).
        if isinstance(failure, RpcdError) or logging.getLogger().isEnabledFor(logging.DEBUG):
            return redact_and_cut(str(failure), 300)  # redact first: a cut key would no longer match
        return "(exception text only in the debug log)"

    extra: dict[str, Any] = {
        "failures": [{"type": getattr(m, "kind", type(m).__name__), "message": text(m)} for m in members],
    }
    if context is not None:
        extra.update(
            operation=context.operation,
            phase=context.phase,
            terminal=context.terminal,
            target={k: v for k, v in (("cwd", context.cwd), ("sessionPath", context.session_path),
                                      ("entryId", context.entry_id)) if v is not None},
        )
    logger.error(message, extra=extra)
