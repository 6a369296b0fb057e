"""``bash``: one shell command in the session's cwd, output streamed and tail-truncated (Pi's ``bash.js``).

The command runs as ``/bin/bash -c <command>`` (Pi's shell resolution; the ``shellPath``
setting wins) in a new session, so it and everything it starts share one process group.
stdout and stderr go, as they arrive, to one ``OutputAccumulator``; partial results reach
``ctx.on_update`` at most every 100 ms (the first one, empty, at once). The environment is
the daemon's less its secrets (``rpcd.tools.environment``), with ``<agentDir>/bin`` first on ``PATH``
and the session's ``PI_*`` variables.

Ending: after the shell exits, output is read until the pipes close or stay quiet for 100 ms
(a background child keeping them open cannot hold the call). Abort and ``timeout`` stop the
whole process group: SIGTERM, then SIGKILL for whatever is left after a grace period (Pi
sends SIGKILL at once; a grace lets well-behaved programs clean up). A command killed by a
signal of its own reports success, as in Pi (Node's exit code is ``null`` then).
"""

from __future__ import annotations

import contextlib
import math
import os
import signal as signals
import subprocess
import time
from collections.abc import Callable, Mapping
from typing import Any, Final, Protocol

import anyio
import anyio.abc

from rpcd.tools.base import AbortSignal, FunctionTool, ToolCallContext, ToolResult, schema
from rpcd.tools.binaries import shell_config
from rpcd.tools.environment import DEFAULT_POLICY, EnvironmentPolicy
from rpcd.tools.errors import ToolError
from rpcd.tools.operations import ShellExit, ShellOperations
from rpcd.tools.output import OutputAccumulator
from rpcd.tools.sandbox import OFF as SANDBOX_OFF
from rpcd.tools.sandbox import SandboxPolicy, SandboxUnavailableError, sandboxed
from rpcd.tools.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size
from rpcd.tools.validation import js_number_text

NAME: Final = "bash"
DESCRIPTION: Final = (
    "Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to "
    f"last {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit first). If truncated, full "
    "output is saved to a temp file. Optionally provide a timeout in seconds."
)
PARAMETERS: Final = schema(
    {
        "command": {"type": "string", "description": "Shell command to execute"},
        "timeout": {"type": "number", "description": "Timeout in seconds (optional, no default timeout)"},
    },
    ("command",),
)
PROMPT_SNIPPET: Final = "Execute bash commands (ls, grep, find, etc.)"
PROMPT_GUIDELINES: Final = ("You can inspect PI_* environment variables for current model and session details.",)
MAX_TIMEOUT_MS: Final = 2_147_483_647
UPDATE_THROTTLE_S: Final = 0.1
EXIT_STDIO_GRACE_S: Final = 0.1
KILL_GRACE_S: Final = 1.0
"""How long a process group gets between SIGTERM and SIGKILL on abort or timeout."""
SESSION_ENV_KEYS: Final = ("PI_SESSION_ID", "PI_SESSION_FILE", "PI_PROVIDER", "PI_MODEL", "PI_REASONING_LEVEL")
TEMP_FILE_PREFIX: Final = "pi-bash"


def shell_env(agent_dir: str | None, base: Mapping[str, str] | None = None,
              policy: EnvironmentPolicy = DEFAULT_POLICY) -> dict[str, str]:
    """Pi's ``getShellEnv``: the process environment with ``<agentDir>/bin`` first on ``PATH`` —
    as ``policy`` lets a command see it (``rpcd.tools.environment``: by default without its secrets;
    Pi passes them all)."""
    env = policy.apply(os.environ if base is None else base)
    if agent_dir is None:
        return env
    bin_dir = os.path.join(agent_dir, "bin")
    current = env.get("PATH", "")
    entries = [p for p in current.split(os.pathsep) if p]
    if bin_dir not in entries:
        env["PATH"] = os.pathsep.join(p for p in (bin_dir, current) if p)
    return env


def _timeout_seconds(timeout: Any) -> float | None:
    if timeout is None:
        return None
    if not isinstance(timeout, int | float) or not math.isfinite(timeout) or timeout <= 0:
        raise ToolError("Invalid timeout: must be a finite number of seconds")
    if timeout * 1000 > MAX_TIMEOUT_MS:
        raise ToolError(f"Invalid timeout: maximum is {js_number_text(MAX_TIMEOUT_MS / 1000)} seconds")
    return float(timeout)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def kill_process_group(pgid: int, grace: float = KILL_GRACE_S) -> None:
    """SIGTERM the group, SIGKILL what is still there after ``grace`` seconds."""
    try:
        os.killpg(pgid, signals.SIGTERM)
    except ProcessLookupError:
        return
    except PermissionError:
        pass
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        await anyio.sleep(0.02)
        if not _group_alive(pgid):
            return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signals.SIGKILL)


def _status(text: str, status: str) -> str:
    return f"{text}\n\n{status}" if text else status


class ShellSink(Protocol):
    """Where ``run_shell`` puts a command's output (stdout and stderr interleaved, raw bytes)."""

    data_seen: anyio.Event
    """Set on every chunk; ``run_shell`` replaces it while it waits for the last output."""

    def on_data(self, data: bytes) -> None: ...

    async def updater(self) -> None:
        """Runs beside the command until it ends (throttled partial results); may return at once."""
        ...


class _Run:
    """One command's output, update throttling and formatting."""

    def __init__(self, ctx: ToolCallContext) -> None:
        self.ctx = ctx
        self.output = OutputAccumulator(temp_file_prefix=TEMP_FILE_PREFIX)
        self.accepting = True
        self.dirty = anyio.Event()
        self.data_seen = anyio.Event()

    def on_data(self, data: bytes) -> None:
        if not self.accepting:
            return
        self.output.append(data)
        self.dirty.set()
        self.data_seen.set()

    def emit_update(self) -> None:
        if self.ctx.on_update is None:
            return
        content, truncation, full_path = self.output.snapshot(persist_if_truncated=True)
        details: dict[str, Any] = {}
        if truncation["truncated"]:
            details["truncation"] = truncation
        if full_path is not None:
            details["fullOutputPath"] = full_path
        self.ctx.on_update({"content": [{"type": "text", "text": content or ""}], "details": details})

    async def updater(self) -> None:
        if self.ctx.on_update is None:
            return
        while True:
            await self.dirty.wait()
            self.dirty = anyio.Event()
            self.emit_update()
            await anyio.sleep(UPDATE_THROTTLE_S)

    def finish(self) -> tuple[str, dict[str, Any], str | None]:
        self.accepting = False
        self.output.finish()
        if self.dirty.is_set():
            self.emit_update()
            self.dirty = anyio.Event()
        snapshot = self.output.snapshot(persist_if_truncated=True)
        self.output.close_temp_file()
        return snapshot

    def format(self, snapshot: tuple[str, dict[str, Any], str | None], empty: str = "(no output)") -> tuple[str, Any]:
        content, truncation, full_path = snapshot
        text = content or empty
        details = None
        if truncation["truncated"]:
            details = {"truncation": truncation, "fullOutputPath": full_path}
            start = truncation["totalLines"] - truncation["outputLines"] + 1
            end = truncation["totalLines"]
            if truncation["lastLinePartial"]:
                text += (f"\n\n[Showing last {format_size(truncation['outputBytes'])} of line {end} (line is "
                         f"{format_size(self.output.last_line_bytes)}). Full output: {full_path}]")
            elif truncation["truncatedBy"] == "lines":
                text += f"\n\n[Showing lines {start}-{end} of {truncation['totalLines']}. Full output: {full_path}]"
            else:
                text += (f"\n\n[Showing lines {start}-{end} of {truncation['totalLines']} "
                         f"({format_size(DEFAULT_MAX_BYTES)} limit). Full output: {full_path}]")
        return text, details


async def _pump(stream: anyio.abc.ByteReceiveStream | None, run: ShellSink) -> None:
    if stream is None:
        return
    try:
        async for chunk in stream:
            run.on_data(chunk)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        return


async def run_shell(command: str, cwd: str, run: ShellSink, *, signal: AbortSignal, timeout: float | None,
                    env: Mapping[str, str], shell_path: str | None, shell_ops: ShellOperations | None = None,
                    tool_call_id: str = "", sandbox: SandboxPolicy = SANDBOX_OFF) -> tuple[int | None, str | None]:
    """Run ``command`` with the session's shell in ``cwd``, in its own process group (the one
    runner of the bash tool and the client ``bash``) — or through ``shell_ops`` (an editor's
    terminal) — inside ``sandbox`` (``rpcd.tools.sandbox``); ``(exit code or None if killed by a
    signal, "aborted" | "timeout" | None)``. Raises ``ToolError`` when it cannot start (a sandbox
    this machine cannot give included: then nothing runs)."""
    if signal.aborted:
        return None, "aborted"
    try:
        shell, shell_args = shell_config(shell_path)
    except FileNotFoundError as exc:
        raise ToolError(str(exc)) from None
    if not os.access(cwd, os.F_OK):
        raise ToolError(f"Working directory does not exist: {cwd}\nCannot execute bash commands.")
    try:
        argv = sandboxed([shell, *shell_args, command], cwd, sandbox)
    except SandboxUnavailableError as exc:
        raise ToolError(str(exc)) from None
    if shell_ops is not None:
        return await _exec_elsewhere(shell_ops, argv, cwd, run, signal, timeout, env, tool_call_id)
    try:
        process = await anyio.open_process(
            argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
    except OSError as exc:
        raise ToolError(f"spawn {shell} {exc.strerror or 'failed'}".strip()) from None
    pgid = process.pid
    stop_reason: str | None = None
    killer_done = anyio.Event()
    killer_done.set()

    async with process, anyio.create_task_group() as group:
        pumps_done = anyio.Event()

        async def pumps() -> None:
            async with anyio.create_task_group() as inner:
                inner.start_soon(_pump, process.stdout, run)
                inner.start_soon(_pump, process.stderr, run)
            pumps_done.set()

        async def stop(reason: str) -> None:
            nonlocal stop_reason, killer_done
            if stop_reason is None:
                stop_reason = reason
            done = killer_done = anyio.Event()
            with anyio.CancelScope(shield=True):
                await kill_process_group(pgid)
            done.set()

        async def watch_abort() -> None:
            await signal.wait()
            await stop("aborted")

        async def watch_timeout() -> None:
            assert timeout is not None
            await anyio.sleep(timeout)
            await stop("timeout")

        group.start_soon(pumps)
        group.start_soon(watch_abort)
        if timeout is not None:
            group.start_soon(watch_timeout)
        group.start_soon(run.updater)
        code = await process.wait()
        # the shell is gone: read on while output arrives, until the pipes close or go quiet
        while not pumps_done.is_set():
            run.data_seen = anyio.Event()
            with anyio.move_on_after(EXIT_STDIO_GRACE_S):
                async with anyio.create_task_group() as either:

                    async def on(event: anyio.Event) -> None:
                        await event.wait()
                        either.cancel_scope.cancel()

                    either.start_soon(on, pumps_done)
                    either.start_soon(on, run.data_seen)
                continue
            break
        with anyio.CancelScope(shield=True):
            await killer_done.wait()
        group.cancel_scope.cancel()
    if signal.aborted:
        return code, "aborted"
    return (None if code is None or code < 0 else code), stop_reason


async def _exec_elsewhere(shell_ops: ShellOperations, argv: list[str], cwd: str, run: ShellSink, signal: AbortSignal,
                          timeout: float | None, env: Mapping[str, str],
                          tool_call_id: str) -> tuple[int | None, str | None]:
    """The command through ``shell_ops`` (an editor's terminal): the same output accumulator and
    update throttling as a local run; the environment handed over is only what the session adds to
    the daemon's (the rest of the daemon's environment, its keys included, never leaves)."""
    added = {name: value for name, value in env.items() if os.environ.get(name) != value}
    outcome: list[ShellExit] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as group:
        group.start_soon(run.updater)  # returns at once when nobody listens for updates
        try:
            outcome.append(await shell_ops.exec(argv, cwd, env=added, on_data=run.on_data, signal=signal,
                                                timeout=timeout, tool_call_id=tool_call_id))
        except Exception as exc:  # re-raised outside the group: never an ExceptionGroup
            failure.append(exc)
        group.cancel_scope.cancel()
    if failure:
        raise failure[0]
    ended = outcome[0]
    if signal.aborted:
        return ended.code, "aborted"
    code = None if ended.code is None or ended.code < 0 else ended.code
    return code, ended.stopped


def create_bash_tool(cwd: str, *, agent_dir: str | None = None, shell_path: str | None = None,
                     command_prefix: str | None = None, base_env: Mapping[str, str] | None = None,
                     shell_ops: ShellOperations | None = None,
                     env_policy: EnvironmentPolicy = DEFAULT_POLICY,
                     sandbox: Callable[[], SandboxPolicy] | None = None) -> FunctionTool:
    """Pi's ``createBashTool(cwd, {shellPath, commandPrefix, operations})``; ``base_env`` replaces
    ``os.environ`` (filtered by ``env_policy``); ``shell_ops`` runs the command elsewhere
    (``rpcd.tools.operations``); ``sandbox`` says, for each call, the sandbox it runs in."""

    async def execute(tool_call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        command = args["command"]
        if command_prefix:
            command = f"{command_prefix}\n{command}"
        env = shell_env(agent_dir, base_env, env_policy)
        for key in SESSION_ENV_KEYS:
            env.pop(key, None)
        env.update(ctx.session_env)
        run = _Run(ctx)
        if ctx.on_update is not None:
            ctx.on_update({"content": []})
        try:
            timeout = _timeout_seconds(args.get("timeout"))
            code, stopped = await run_shell(command, cwd, run, signal=ctx.signal, timeout=timeout, env=env,
                                            shell_path=shell_path, shell_ops=shell_ops, tool_call_id=tool_call_id,
                                            sandbox=sandbox() if sandbox is not None else SANDBOX_OFF)
        except ToolError:
            run.finish()
            raise
        snapshot = run.finish()
        if stopped == "aborted":
            text, _ = run.format(snapshot, "")
            raise ToolError(_status(text, "Command aborted"))
        if stopped == "timeout":
            text, _ = run.format(snapshot, "")
            raise ToolError(_status(text, f"Command timed out after {js_number_text(args['timeout'])} seconds"))
        text, details = run.format(snapshot)
        if code is not None and code != 0:
            raise ToolError(_status(text, f"Command exited with code {code}"))
        result: ToolResult = {"content": [{"type": "text", "text": text}]}
        if details is not None:
            result["details"] = details
        return result

    return FunctionTool(
        name=NAME, label=NAME, description=DESCRIPTION, parameters=PARAMETERS, run=execute,
        prompt_snippet=PROMPT_SNIPPET, prompt_guidelines=PROMPT_GUIDELINES,
    )
