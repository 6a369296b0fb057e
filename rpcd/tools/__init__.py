"""The built-in coding tools — Pi 0.85.0's ``read``, ``bash``, ``edit``, ``write``, ``grep``,
``find``, ``ls`` (one module each) — their truncation (``truncate``) and path (``paths``) rules,
tool selection (``registry``), where the file and shell tools do their I/O (``operations``: local,
or a front's editor), the seam every tool call passes (``seam``: lookup,
validation, ``tool_call`` hooks, the approval point, execution, ``tool_result`` hooks), and the
approval policy at that point (``approval``: the gate; ``approval_facts``: what a call is, for a
person; ``approval_rules``: remembered answers).

Tools are bound to a cwd when created: the runtime creates them anew for every session, so
after a replacement into another project every relative path means the new cwd.

Doors: may import ``rpcd.core`` only; the runtime imports the tools, never the reverse.
"""

from typing import TYPE_CHECKING

from rpcd.core.lazy import lazy_exports

if TYPE_CHECKING:
    from rpcd.tools.approval import POLICY_SETTING, ApprovalGate, parse_policy
    from rpcd.tools.approval_facts import ToolProfile, builtin_profile, extension_profile
    from rpcd.tools.approval_rules import ApprovalRules, ApprovalRulesError
    from rpcd.tools.base import (
        ABORTED_MESSAGE,
        AbortSignal,
        FunctionTool,
        Tool,
        ToolCallContext,
        ToolResult,
        error_result,
        text_result,
    )
    from rpcd.tools.errors import ToolError
    from rpcd.tools.operations import ReadText, ShellExit, ShellOperations, ToolOperations, WriteText
    from rpcd.tools.registry import (
        BUILTIN_TOOL_NAMES,
        DEFAULT_ACTIVE_TOOLS,
        ToolOptions,
        ToolSelection,
        active_tool_names,
        create_builtin_tools,
    )
    from rpcd.tools.seam import (
        AfterToolCall,
        BeforeToolCall,
        Block,
        Prepared,
        ToolCall,
        ToolCallHooks,
        ToolOutcome,
        ToolSeam,
    )

__getattr__, __dir__ = lazy_exports(__name__, {
    ".approval": ("POLICY_SETTING", "ApprovalGate", "parse_policy"),
    ".approval_facts": ("ToolProfile", "builtin_profile", "extension_profile"),
    ".approval_rules": ("ApprovalRules", "ApprovalRulesError"),
    ".base": (
        "ABORTED_MESSAGE",
        "AbortSignal",
        "FunctionTool",
        "Tool",
        "ToolCallContext",
        "ToolResult",
        "error_result",
        "text_result",
    ),
    ".errors": ("ToolError",),
    ".operations": ("ReadText", "ShellExit", "ShellOperations", "ToolOperations", "WriteText"),
    ".registry": (
        "BUILTIN_TOOL_NAMES",
        "DEFAULT_ACTIVE_TOOLS",
        "ToolOptions",
        "ToolSelection",
        "active_tool_names",
        "create_builtin_tools",
    ),
    ".seam": (
        "AfterToolCall",
        "BeforeToolCall",
        "Block",
        "Prepared",
        "ToolCall",
        "ToolCallHooks",
        "ToolOutcome",
        "ToolSeam",
    ),
})

__all__ = [
    "ABORTED_MESSAGE",
    "BUILTIN_TOOL_NAMES",
    "DEFAULT_ACTIVE_TOOLS",
    "POLICY_SETTING",
    "AbortSignal",
    "AfterToolCall",
    "ApprovalGate",
    "ApprovalRules",
    "ApprovalRulesError",
    "BeforeToolCall",
    "Block",
    "FunctionTool",
    "Prepared",
    "ReadText",
    "ShellExit",
    "ShellOperations",
    "Tool",
    "ToolCall",
    "ToolCallContext",
    "ToolCallHooks",
    "ToolError",
    "ToolOperations",
    "ToolOptions",
    "ToolOutcome",
    "ToolProfile",
    "ToolResult",
    "ToolSeam",
    "ToolSelection",
    "WriteText",
    "active_tool_names",
    "builtin_profile",
    "create_builtin_tools",
    "error_result",
    "extension_profile",
    "parse_policy",
    "text_result",
]
