"""An editor for the tests, built on the official Python SDK's client side (its ``Client``
interface; the connection is ``spawn_agent_process`` / ``ClientSideConnection``): it records every
``session/update`` per session in arrival order, answers ``session/request_permission`` from a
script, serves ``fs/*`` from in-memory buffers over the disk (an unsaved editor buffer wins), and
runs ``terminal/*`` as real local processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import spawn_agent_process
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    EnvVariable,
    FileSystemCapabilities,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

from tests.driver import STORE_FSYNC

REPO = Path(__file__).resolve().parents[2]

Answer = str | None
"""An option id to select, or ``None`` for ``{"outcome": "cancelled"}``."""


def plain(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


class _Terminal:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.output = bytearray()
        self.reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while chunk := await self.process.stdout.read(65536):
            self.output += chunk


class Editor:
    """The client's side: state a test inspects, behaviour a test scripts."""

    def __init__(self, *, fs: bool = False, terminal: bool = False, elicitation: bool = False) -> None:
        self.updates: list[tuple[str, dict[str, Any]]] = []
        """``(sessionId, update)`` in arrival order, every session."""
        self.permissions: list[dict[str, Any]] = []
        self.answers: list[Answer] = []
        """Scripted permission answers, first first; when empty, ``default_answer``."""
        self.default_answer: Answer = "allow_once"
        self.on_permission: Callable[[dict[str, Any]], None] | None = None
        self.buffers: dict[str, str] = {}
        """Unsaved editor text by absolute path (reads see it; writes land here, not on disk)."""
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []
        self.seen: list[tuple[str, Any]] = []
        """What reached the editor, in arrival order: ``("update", u)``, ``("read", path)``, ``("write", path)``."""
        self.read_delay = 0.0
        """Seconds an ``fs/read_text_file`` answer takes (a busy editor)."""
        self.terminals: dict[str, _Terminal] = {}
        self.terminal_commands: list[tuple[str, list[str], str | None, dict[str, str]]] = []
        self.elicitations: list[dict[str, Any]] = []
        """``elicitation/create`` requests as they came (``{message, mode}``)."""
        self.elicitation_answers: list[dict[str, Any]] = []
        """Scripted answers (``{"action": "accept", "content": {...}}``), first first; then ``cancel``."""
        self.capabilities = ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=terminal,
            elicitation=ElicitationCapabilities(form=ElicitationFormCapabilities()) if elicitation else None)
        self.permission_asked = asyncio.Event()
        self._arrived = asyncio.Event()

    # -- what the tests read ---------------------------------------------------------------------------

    def of(self, session_id: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [u for sid, u in self.updates if sid == session_id and (kind is None or u["sessionUpdate"] == kind)]

    def text_of(self, session_id: str, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"].get("text", "") for u in self.of(session_id, kind))

    def tool_updates(self, session_id: str, tool_call_id: str) -> list[dict[str, Any]]:
        return [u for u in self.of(session_id) if u.get("toolCallId") == tool_call_id]

    # -- the SDK's Client interface --------------------------------------------------------------------

    async def wait_for(self, condition: Callable[[], object]) -> None:
        """Until ``condition()`` holds (checked after every update that arrives)."""
        while not condition():
            self._arrived.clear()
            await self._arrived.wait()

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append((session_id, plain(update)))
        self.seen.append(("update", self.updates[-1][1]))
        self._arrived.set()

    async def request_permission(self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption],
                                 **_: Any) -> RequestPermissionResponse:
        request = {"sessionId": session_id, "toolCall": plain(tool_call), "options": [plain(o) for o in options]}
        self.permissions.append(request)
        self.permission_asked.set()
        if self.on_permission is not None:
            self.on_permission(request)
        answer = self.answers.pop(0) if self.answers else self.default_answer
        if answer == "wait":  # a person who does not answer until the prompt is cancelled
            await asyncio.Event().wait()
        if answer is None:
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def create_elicitation(self, message: str, mode: Any, **_: Any) -> dict[str, Any]:
        self.elicitations.append({"message": message, "mode": plain(mode)})
        return self.elicitation_answers.pop(0) if self.elicitation_answers else {"action": "cancel"}

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **_: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        self.seen.append(("read", path))
        if self.read_delay:
            await asyncio.sleep(self.read_delay)
        if path in self.buffers:
            return ReadTextFileResponse(content=self.buffers[path])
        return ReadTextFileResponse(content=_disk_text(path))

    async def write_text_file(self, session_id: str, path: str, content: str, **_: Any) -> WriteTextFileResponse:
        self.writes.append((path, content))
        self.seen.append(("write", path))
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def create_terminal(self, session_id: str, command: str, args: list[str] | None = None,
                              env: list[EnvVariable] | None = None, cwd: str | None = None,
                              output_byte_limit: int | None = None, **_: Any) -> CreateTerminalResponse:
        extra = {v.name: v.value for v in env or []}
        self.terminal_commands.append((command, list(args or []), cwd, extra))
        process = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, env={**os.environ, **extra}, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True)
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = _Terminal(process)
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(self, session_id: str, terminal_id: str, **_: Any) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        code = terminal.process.returncode
        status = None if code is None else TerminalExitStatus(exit_code=code if code >= 0 else None,
                                                              signal=None if code >= 0 else f"signal {-code}")
        return TerminalOutputResponse(output=terminal.output.decode("utf-8", "replace"), truncated=False,
                                      exit_status=status)

    async def wait_for_terminal_exit(self, session_id: str, terminal_id: str, **_: Any) -> WaitForTerminalExitResponse:
        terminal = self.terminals[terminal_id]
        code = await terminal.process.wait()
        await terminal.reader
        return WaitForTerminalExitResponse(exit_code=code if code >= 0 else None,
                                           signal=None if code >= 0 else f"signal {-code}")

    async def kill_terminal(self, session_id: str, terminal_id: str, **_: Any) -> KillTerminalResponse:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.terminals[terminal_id].process.pid, 9)
        return KillTerminalResponse()

    async def release_terminal(self, session_id: str, terminal_id: str, **_: Any) -> ReleaseTerminalResponse:
        terminal = self.terminals.pop(terminal_id)
        if terminal.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(terminal.process.pid, 9)
            await terminal.process.wait()
        return ReleaseTerminalResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return {}

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None


def _disk_text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def agent_env(agent_dir: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment an editor would give rpcd: no PI_/RPCD_ variables of ours (but the suite's
    ``RPCD_STORE_FSYNC``: tests/driver.py), no keys."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "RPCD_")) or k == STORE_FSYNC}
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["PI_CODING_AGENT_DIR"] = str(agent_dir)
    env.update(extra or {})
    return env


@asynccontextmanager
async def spawn(editor: Editor, agent_dir: Path, *args: str, env: Mapping[str, str] | None = None,
                initialize: bool = True) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """``rpcd acp`` as an editor spawns it, connected through the SDK's ``spawn_agent_process``."""
    async with spawn_agent_process(
        editor, sys.executable, "-P", "-m", "rpcd", "acp", "--agent-dir", str(agent_dir), *args,
        env=agent_env(agent_dir, env), transport_kwargs={"limit": 64 * 1024 * 1024},
        use_unstable_protocol=True,
    ) as (conn, process):
        if initialize:
            await conn.initialize(protocol_version=1, client_capabilities=editor.capabilities)
        yield conn, process


async def request(conn: ClientSideConnection, method: str, params: dict[str, Any]) -> Any:
    """A method the Python SDK's client has no call for (0.12: ``session/delete``)."""
    return await conn._conn.send_request(method, params)
