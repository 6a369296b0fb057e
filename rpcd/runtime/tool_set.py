"""One session's tools: what is configured and what is active (Pi's ``_toolRegistry``,
``_toolDefinitions`` and the active set of ``AgentSession``).

The registry is the built-ins bound to the session's cwd followed by the extensions' tools (an
extension tool named like a built-in takes its place), both limited by the process's tool flags
(``--tools`` allowlist, ``--exclude-tools``). The active set is what the model is offered on its next
call; it starts from Pi's selection (``rpcd.tools.active_tool_names``) and changes with
``set_active`` (``pi.set_active_tools``: unknown names ignored, order kept) and ``refresh`` (a tool an
extension registered after load is added, as Pi's ``_refreshToolRegistry`` adds it).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio

from rpcd.runtime.extensions import ExtensionRunner, RegisteredTool
from rpcd.tools import (
    ABORTED_MESSAGE,
    BUILTIN_TOOL_NAMES,
    Tool,
    ToolCallContext,
    ToolError,
    ToolProfile,
    ToolSelection,
    active_tool_names,
    builtin_profile,
    extension_profile,
)

ABORT_GRACE_S = 2.0
"""How long an extension tool may take to settle on its own after its abort signal fired (Pi waits for
it; rpcd stops waiting then, so a tool that ignores the signal cannot hold a replacement up)."""


def builtin_source_info(name: str) -> dict[str, Any]:
    """Pi's ``createSyntheticSourceInfo("<builtin:name>", {source: "builtin"})``."""
    return {"path": f"<builtin:{name}>", "source": "builtin", "scope": "temporary", "origin": "top-level"}


class ExtensionTool:
    """An extension's tool behind the seam: its ``prepare_arguments`` before validation, its
    ``execute`` with the call's abort signal and update callback (Pi's ``wrapRegisteredTool``)."""

    accepts_signal = True

    def __init__(self, runner: ExtensionRunner, definition: RegisteredTool,
                 active: Callable[[], Sequence[str]] = tuple) -> None:
        self._runner = runner
        self.definition = definition
        self._active = active

    @property
    def execution_mode(self) -> str | None:
        """``"sequential"``: a turn calling this tool runs all its calls one after another."""
        return self.definition.execution_mode

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def label(self) -> str:
        return self.definition.label

    @property
    def description(self) -> str:
        return self.definition.description

    @property
    def parameters(self) -> Mapping[str, Any]:
        return self.definition.parameters

    @property
    def prompt_snippet(self) -> str | None:
        return self.definition.prompt_snippet

    @property
    def prompt_guidelines(self) -> tuple[str, ...]:
        return tuple(self.definition.prompt_guidelines)

    async def prepare_arguments(self, args: dict[str, Any]) -> dict[str, Any]:
        prepare = self.definition.prepare_arguments
        if prepare is None:
            return args
        from rpcd.core.codec import to_json

        prepared = to_json(await prepare(args))  # the edge: validated and persisted next
        if not isinstance(prepared, dict):
            raise ToolError(f"prepare_arguments of tool {self.name} must return an object")
        return prepared

    async def execute(self, tool_call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        before = list(self._active())
        result = await self._execute(tool_call_id, args, ctx)
        after = list(self._active())
        # Pi's wrapRegisteredTool: tools the call activated (none removed) are recorded on its result
        added = [name for name in after if name not in set(before)]
        if result.get("isError") or not added or not all(name in after for name in before):
            return result
        earlier = result.get("addedToolNames")
        return {**result, "addedToolNames": list(dict.fromkeys(
            [*(earlier if isinstance(earlier, list) else []), *added]))}

    async def _execute(self, tool_call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> dict[str, Any]:
        signal = ctx.signal
        update = ctx.on_update

        def on_update(partial: Mapping[str, Any]) -> None:
            if update is not None:
                update(dict(partial))
        outcome: list[dict[str, Any]] = []
        async with anyio.create_task_group() as group:

            async def run() -> None:
                outcome.append(await self._runner.execute_tool(self.name, tool_call_id, args, signal, on_update))
                group.cancel_scope.cancel()

            async def grace() -> None:
                await signal.wait()
                await anyio.sleep(ABORT_GRACE_S)
                group.cancel_scope.cancel()

            group.start_soon(run)
            group.start_soon(grace)
        if not outcome:
            raise ToolError(ABORTED_MESSAGE)
        return outcome[0]


class ToolSet:
    """The registry and active set of one session."""

    def __init__(self, *, builtin: Mapping[str, Tool], runner: ExtensionRunner | None, selection: ToolSelection,
                 default_tools: Sequence[str] | None, mcp_tools: Mapping[str, Tool] | None = None,
                 mcp_profiles: Mapping[str, ToolProfile] | None = None) -> None:
        self._builtin = dict(builtin)
        self._mcp = dict(mcp_tools or {})
        """The session's MCP servers' tools (``mcp__<server>__<tool>``), after the extensions'."""
        self._mcp_profiles = dict(mcp_profiles or {})
        self._runner = runner
        self._selection = selection
        self._default_tools = default_tools
        self.registry: dict[str, Tool] = {}
        self.active: list[str] = []
        self._rebuild_registry()
        extension_names = [n for n in [*self._extension_tools(), *self._mcp] if self._allowed(n)]
        initial = active_tool_names(selection, default_tools=default_tools, builtin=BUILTIN_TOOL_NAMES,
                                    extension_tools=extension_names)
        self.active = [n for n in initial if n in self.registry]

    def _extension_tools(self) -> dict[str, RegisteredTool]:
        return self._runner.tools if self._runner is not None and not self._runner.is_invalidated else {}

    def _allowed(self, name: str) -> bool:
        selection = self._selection
        allowed: set[str] | None = None
        if selection.allow is not None:
            allowed = set(selection.allow)
        elif selection.no_tools:
            allowed = set()
        return (allowed is None or name in allowed) and name not in selection.exclude

    def _rebuild_registry(self) -> None:
        registry: dict[str, Tool] = {n: t for n, t in self._builtin.items() if self._allowed(n)}
        runner = self._runner
        owner = weakref.proxy(self)  # its tools see the active set without a reference cycle
        for name, definition in self._extension_tools().items():
            if self._allowed(name) and runner is not None:
                registry[name] = ExtensionTool(runner, definition, lambda: owner.active)
        for name, tool in self._mcp.items():
            if self._allowed(name) and name not in registry:
                registry[name] = tool
        self.registry = registry

    def refresh(self) -> bool:
        """An extension registered a tool after load: rebuild the registry and activate the new names
        (with an allowlist, every allowed one). Returns whether the active set changed."""
        previous_names = set(self.registry)
        before = list(self.active)
        self._rebuild_registry()
        following = [n for n in before if self._allowed(n)]
        if self._selection.allow is not None:
            following += [n for n in self.registry if n in set(self._selection.allow)]
        else:
            following += [n for n in self.registry if n not in previous_names]
        self.active = [n for n in dict.fromkeys(following) if n in self.registry]
        return self.active != before

    def set_active(self, names: Sequence[str]) -> None:
        """Pi's ``setActiveToolsByName``: the names in the registry, in the given order."""
        self.active = [n for n in dict.fromkeys(names) if n in self.registry]

    def active_tools(self) -> dict[str, Tool]:
        return {name: self.registry[name] for name in self.active}

    def profiles(self) -> dict[str, ToolProfile]:
        """How the approval gate classifies each tool: a built-in by its name; an extension's tool (also
        one that took a built-in's name) by its own ``read_only`` declaration; an MCP tool by its server's
        ``readOnlyHint``."""
        return {name: (extension_profile(tool.definition.read_only) if isinstance(tool, ExtensionTool)
                       else self._mcp_profiles[name] if name in self._mcp_profiles and tool is self._mcp.get(name)
                       else builtin_profile(name)) for name, tool in self.registry.items()}

    def describe(self) -> list[dict[str, Any]]:
        """Pi's ``getAllTools``: every configured tool with its schema, guidelines and ``sourceInfo``."""
        runner = self._runner
        out: list[dict[str, Any]] = []
        for name, tool in self.registry.items():
            info: dict[str, Any] = {"name": name, "description": tool.description,
                                    "parameters": dict(tool.parameters)}
            if tool.prompt_guidelines:
                info["promptGuidelines"] = list(tool.prompt_guidelines)
            if isinstance(tool, ExtensionTool) and runner is not None:
                info["sourceInfo"] = dict(runner.source_info(tool.definition.extension_path))
            elif tool is self._mcp.get(name):
                info["sourceInfo"] = {"path": f"mcp:{getattr(tool, 'server', '')}", "source": "mcp",
                                      "scope": "temporary", "origin": "top-level"}
            else:
                info["sourceInfo"] = builtin_source_info(name)
            out.append(info)
        return out


ToolsChanged = Callable[[], None]
