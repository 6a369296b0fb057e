"""Which tools a session starts with: Pi's ``createAgentSession`` + ``_refreshToolRegistry`` rules."""

from __future__ import annotations

import pytest

from rpcd.tools import BUILTIN_TOOL_NAMES, ToolSelection, active_tool_names


def names(selection: ToolSelection, *, default_tools: list[str] | None = None,
          extensions: tuple[str, ...] = ()) -> list[str]:
    return active_tool_names(selection, default_tools=default_tools, builtin=BUILTIN_TOOL_NAMES,
                             extension_tools=list(extensions))


@pytest.mark.parametrize(("selection", "default_tools", "extensions", "expected"), [
    (ToolSelection(), None, (), ["read", "bash", "edit", "write"]),
    (ToolSelection(), None, ("shout",), ["read", "bash", "edit", "write", "shout"]),
    (ToolSelection(), ["grep", "ls"], ("shout",), ["grep", "ls", "shout"]),
    (ToolSelection(), [], ("shout",), ["shout"]),
    (ToolSelection(allow=("ls", "shout", "nonexistent")), None, ("shout", "other"), ["ls", "shout"]),
    (ToolSelection(allow=("grep",)), ["read"], (), ["grep"]),
    (ToolSelection(exclude=("bash",)), None, ("shout",), ["read", "edit", "write", "shout"]),
    (ToolSelection(exclude=("shout",)), None, ("shout",), ["read", "bash", "edit", "write"]),
    (ToolSelection(no_builtin_tools=True), None, ("shout",), ["shout"]),
    (ToolSelection(no_tools=True), None, ("shout",), []),
    (ToolSelection(allow=("read", "bash"), exclude=("bash",)), None, (), ["read"]),
    # an extension tool named like a built-in replaces it in place
    (ToolSelection(), None, ("bash", "shout"), ["read", "bash", "edit", "write", "shout"]),
    (ToolSelection(), ["find", "find", "ls"], (), ["find", "ls"]),
])
def test_active_tools_follow_pis_selection_rules(selection: ToolSelection, default_tools: list[str] | None,
                                                 extensions: tuple[str, ...], expected: list[str]) -> None:
    assert names(selection, default_tools=default_tools, extensions=extensions) == expected
