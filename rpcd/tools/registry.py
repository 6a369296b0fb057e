"""The built-in tools by name, created for one cwd (Pi's ``createAllToolDefinitions``), and Pi's
selection rule: which tools a session starts with (``createAgentSession`` + the CLI flags)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

import attrs

from rpcd.tools.base import Tool
from rpcd.tools.bash import create_bash_tool
from rpcd.tools.edit import create_edit_tool
from rpcd.tools.environment import DEFAULT_POLICY, EnvironmentPolicy
from rpcd.tools.find import create_find_tool
from rpcd.tools.grep import create_grep_tool
from rpcd.tools.ls import create_ls_tool
from rpcd.tools.operations import ToolOperations
from rpcd.tools.read import create_read_tool
from rpcd.tools.sandbox import SandboxPolicy
from rpcd.tools.write import create_write_tool

BUILTIN_TOOL_NAMES: Final = ("read", "bash", "edit", "write", "grep", "find", "ls")
"""Pi 0.85.0's built-ins in Pi's order (``powershell`` is Windows-only and not provided)."""
DEFAULT_ACTIVE_TOOLS: Final = ("read", "bash", "edit", "write")


@attrs.frozen
class ToolOptions:
    """What the settings change in the built-ins (Pi: ``shellPath``, ``shellCommandPrefix``, ``images.autoResize``;
    rpcd: ``shellEnvironmentPolicy``)."""

    agent_dir: str | None = None
    shell_path: str | None = None
    command_prefix: str | None = None
    auto_resize_images: bool = True
    base_env: Mapping[str, str] | None = None
    """The environment ``bash`` starts from (default: the daemon's)."""
    env_policy: EnvironmentPolicy = DEFAULT_POLICY
    """What of it ``bash`` passes on (the ``shellEnvironmentPolicy`` setting: by default, no secrets)."""
    sandbox: Callable[[], SandboxPolicy] | None = None
    """The sandbox each ``bash`` call runs in, asked per call (``None``: none, as in Pi)."""
    operations: ToolOperations = attrs.field(factory=ToolOperations)
    """Where ``read``/``edit``/``write`` get and put text and ``bash`` runs (default: local)."""


def create_builtin_tools(cwd: str, options: ToolOptions | None = None) -> dict[str, Tool]:
    """Every built-in tool bound to ``cwd``, by name, in Pi's order."""
    opts = options or ToolOptions()
    ops = opts.operations
    factories: dict[str, Callable[[], Tool]] = {
        "read": lambda: create_read_tool(cwd, auto_resize_images=opts.auto_resize_images,
                                         read_text=ops.read_text),
        "bash": lambda: create_bash_tool(cwd, agent_dir=opts.agent_dir, shell_path=opts.shell_path,
                                         command_prefix=opts.command_prefix, base_env=opts.base_env,
                                         shell_ops=ops.shell, env_policy=opts.env_policy, sandbox=opts.sandbox),
        "edit": lambda: create_edit_tool(cwd, read_text=ops.read_text, write_text=ops.write_text,
                                         before_change=ops.before_change),
        "write": lambda: create_write_tool(cwd, write_text=ops.write_text, before_change=ops.before_change),
        "grep": lambda: create_grep_tool(cwd),
        "find": lambda: create_find_tool(cwd),
        "ls": lambda: create_ls_tool(cwd),
    }
    return {name: factories[name]() for name in BUILTIN_TOOL_NAMES}


@attrs.frozen
class ToolSelection:
    """The process-wide tool flags: ``--tools a,b`` (a strict allowlist of every tool, built-in or
    not), ``--exclude-tools a,b``, ``--no-builtin-tools``, ``--no-tools``."""

    allow: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    no_builtin_tools: bool = False
    no_tools: bool = False


def active_tool_names(
    selection: ToolSelection,
    *,
    default_tools: Sequence[str] | None,
    builtin: Sequence[str],
    extension_tools: Sequence[str],
) -> list[str]:
    """The tools a new session starts with, in order (Pi's ``createAgentSession`` and
    ``_refreshToolRegistry``): the allowlist if given, else ``defaultTools`` (setting) or Pi's
    four defaults (none with ``--no-builtin-tools``/``--no-tools``), then every extension tool;
    excluded names dropped, unknown names ignored, duplicates once. An extension tool named
    like a built-in replaces it in place."""
    excluded = set(selection.exclude)
    allowed: set[str] | None = None
    if selection.allow is not None:
        allowed = set(selection.allow)
    elif selection.no_tools:
        allowed = set()

    def is_allowed(name: str) -> bool:
        return (allowed is None or name in allowed) and name not in excluded

    registry = [name for name in builtin if is_allowed(name)]
    registry += [name for name in extension_tools if is_allowed(name) and name not in registry]
    if selection.allow is not None:
        initial: list[str] = list(selection.allow)
    elif selection.no_tools or selection.no_builtin_tools:
        initial = []
    else:
        initial = list(default_tools if default_tools is not None else DEFAULT_ACTIVE_TOOLS)
    names = [name for name in initial if name not in excluded]
    if allowed is not None:
        names += [name for name in registry if name in allowed]
    else:
        names += [name for name in extension_tools if is_allowed(name)]
    out: list[str] = []
    for name in names:
        if name in registry and name not in out:
            out.append(name)
    return out
