"""One session's MCP servers: the lease on the pool's connections, and what the session gets from
them — tools (with their approval profiles), prompts as commands, diagnostics — until it lets go.

``SessionMcp.open`` runs before the session exists (servers start before ``session_start``);
``bind_ui`` gives it the UI the host bound (a server's questions go there); ``release`` is the
session's disposal. A prompt ``/mcp__<server>__<prompt> args`` is expanded by ``expand`` into the
prompt's messages (``prompts/get``), as ``pi-mcp-adapter`` expands it: positional and ``key=value``
arguments (shell-like quoting), required ones checked first, the messages flattened into one user
message (``[user]``/``[assistant]`` markers when there are several).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any, Final

import attrs

from rpcd.core.errors import InvalidArgumentError, McpServerError
from rpcd.core.values import CommandInfo, Diagnostic, UiContext
from rpcd.mcp.config import ServerConfig
from rpcd.mcp.connection import McpConnection, PromptInfo
from rpcd.mcp.pool import McpLease, McpPool, ServerStatus, status_of
from rpcd.mcp.results import convert_blocks
from rpcd.mcp.tools import McpTool, ResourceTool, qualified_name, server_tools
from rpcd.tools.approval_facts import ToolProfile, extension_profile
from rpcd.tools.base import AbortSignal, Tool
from rpcd.tools.errors import ToolError

SOURCE: Final = "mcp"


@attrs.frozen
class McpPrompt:
    command: str
    server: str
    prompt: PromptInfo
    connection: McpConnection = attrs.field(repr=False)


class SessionMcp:
    """What one session holds of the pool."""

    def __init__(self, lease: McpLease | None) -> None:
        self._lease = lease
        self._ui: UiContext | None = None
        self._tools: dict[str, McpTool | ResourceTool] = {}
        self._prompts: dict[str, McpPrompt] = {}
        for config, connection in lease.connections if lease is not None else ():
            for tool in server_tools(config, connection, self.ui):
                self._tools.setdefault(tool.name, tool)
            if connection.status == "ready":
                for prompt in connection.prompts:
                    name = qualified_name(config.name, prompt.name)
                    self._prompts.setdefault(name, McpPrompt(name, config.name, prompt, connection))

    @classmethod
    async def open(cls, pool: McpPool | None, configs: Sequence[ServerConfig]) -> SessionMcp:
        """Start (or share) the servers ``configs`` name; returns once each is ready or failed."""
        if pool is None or not configs:
            return cls(None)
        return cls(await pool.acquire(configs))

    # -- the session's side ------------------------------------------------------------------------

    def ui(self) -> UiContext | None:
        return self._ui

    def bind_ui(self, ui: UiContext | None) -> None:
        self._ui = ui

    def release(self) -> None:
        """The session is gone: its servers go back to the pool (stopped when nobody holds them)."""
        self._ui = None
        if self._lease is not None:
            self._lease.release()

    def tools(self) -> dict[str, Tool]:
        return dict(self._tools)

    def profiles(self) -> dict[str, ToolProfile]:
        return {name: extension_profile(tool.read_only) for name, tool in self._tools.items()}

    def statuses(self) -> list[ServerStatus]:
        return [status_of(c) for _, c in self._lease.connections] if self._lease is not None else []

    def diagnostics(self) -> list[Diagnostic]:
        """A warning for each named server that is not running (why, in its ``last_error``)."""
        out: list[Diagnostic] = []
        for config, connection in self._lease.connections if self._lease is not None else ():
            if connection.status != "ready":
                why = connection.last_error or connection.status
                out.append(Diagnostic("warning", f"MCP server {config.name} is not running, its tools are not "
                                                 f"available: {why}"))
        return out

    # -- prompts as commands -------------------------------------------------------------------------

    def commands(self) -> list[CommandInfo]:
        out = []
        for name, entry in self._prompts.items():
            hint = " ".join(f"<{a.name}>" if a.required else f"[{a.name}]" for a in entry.prompt.arguments)
            out.append(CommandInfo(
                name=name, source="prompt",
                source_info={"path": f"mcp:{entry.server}", "source": SOURCE, "scope": "temporary",
                             "origin": "top-level"},
                description=entry.prompt.description or f"MCP prompt {entry.prompt.name} of {entry.server}",
                argument_hint=hint or None,
            ))
        return out

    async def expand(self, text: str) -> str | None:
        """The text ``/mcp__<server>__<prompt> args`` stands for; ``None`` if it names no MCP prompt.
        Raises ``InvalidArgumentError`` (a required argument missing, unbalanced quotes) or
        ``McpServerError`` (the server failed)."""
        if not text.startswith(f"/{SOURCE}__"):
            return None
        name, _, rest = text[1:].partition(" ")
        entry = self._prompts.get(name)
        if entry is None:
            return None
        arguments = parse_arguments(entry.prompt, rest)
        try:
            result = await entry.connection.get_prompt(entry.prompt.name, arguments, signal=AbortSignal())
        except ToolError as exc:
            raise McpServerError(exc.message) from None
        return flatten_messages(result.messages)


def parse_arguments(prompt: PromptInfo, text: str) -> dict[str, str]:
    """Positional and ``key=value`` arguments (shell-like quoting) by the prompt's argument names."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise InvalidArgumentError(f"/{prompt.name}: {exc}", param="text") from None
    names = [a.name for a in prompt.arguments]
    out: dict[str, str] = {}
    positional: list[str] = []
    for word in words:
        key, sep, value = word.partition("=")
        if sep and key in names:
            out[key] = value
        else:
            positional.append(word)
    free = [n for n in names if n not in out]
    for name, value in zip(free, positional, strict=False):
        out[name] = value
    if len(positional) > len(free):
        extra = " ".join(positional[len(free):])
        if free:
            out[free[-1]] = f"{out[free[-1]]} {extra}"
        elif names:
            out[names[-1]] = f"{out[names[-1]]} {extra}"
    missing = [a.name for a in prompt.arguments if a.required and not out.get(a.name)]
    if missing:
        raise InvalidArgumentError(f"MCP prompt {prompt.name} needs: {', '.join(missing)}", param="text")
    return out


def flatten_messages(messages: Sequence[Any]) -> str:
    """A prompt's messages as one user message's text."""
    parts: list[tuple[str, str]] = []
    for message in messages:
        role = str(getattr(message, "role", "user"))
        blocks = convert_blocks([getattr(message, "content", None)] if getattr(message, "content", None) else [])
        text = "\n".join(b["text"] for b in blocks if b.get("type") == "text")
        parts.append((role, text))
    if len(parts) == 1 and parts[0][0] == "user":
        return parts[0][1]
    return "\n\n".join(f"[{role}]\n{text}" for role, text in parts)
