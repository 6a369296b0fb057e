"""``ls``: one directory's entries, sorted as Pi sorts them, ``/`` after directories (Pi's ``ls.js``)."""

from __future__ import annotations

import os
import stat
from typing import Any, Final

from rpcd.tools.base import ABORTED_MESSAGE, FunctionTool, ToolCallContext, ToolResult, noted_result, schema
from rpcd.tools.blocking import run_blocking
from rpcd.tools.collation import locale_key
from rpcd.tools.errors import ToolError, node_message
from rpcd.tools.paths import resolve_to_cwd
from rpcd.tools.truncate import DEFAULT_MAX_BYTES, UNLIMITED_LINES, format_size, truncate_head
from rpcd.tools.validation import js_number_text

NAME: Final = "ls"
DEFAULT_LIMIT: Final = 500
DESCRIPTION: Final = (
    "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes "
    f"dotfiles. Output is truncated to {DEFAULT_LIMIT} entries or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit "
    "first)."
)
PARAMETERS: Final = schema(
    {
        "path": {"type": "string", "description": "Directory to list (default: current directory)"},
        "limit": {"type": "number", "description": f"Maximum number of entries to return (default: {DEFAULT_LIMIT})"},
    },
    (),
)
PROMPT_SNIPPET: Final = "List directory contents"


def _list(dir_path: str, limit: int | float) -> ToolResult:
    if not os.access(dir_path, os.F_OK):
        raise ToolError(f"Path not found: {dir_path}")
    try:
        info = os.stat(dir_path)
    except OSError as exc:
        raise ToolError(node_message(exc, "stat", dir_path)) from None
    if not stat.S_ISDIR(info.st_mode):
        raise ToolError(f"Not a directory: {dir_path}")
    try:
        entries = os.listdir(dir_path)
    except OSError as exc:
        raise ToolError(f"Cannot read directory: {node_message(exc, 'scandir', dir_path)}") from None
    entries.sort(key=locale_key)
    results: list[str] = []
    limit_reached = False
    for entry in entries:
        if len(results) >= limit:
            limit_reached = True
            break
        try:
            is_dir = stat.S_ISDIR(os.stat(os.path.join(dir_path, entry)).st_mode)
        except OSError:
            continue  # entries that cannot be stat'ed (a dangling symlink) are skipped, as in Pi
        results.append(entry + "/" if is_dir else entry)
    if not results:
        return {"content": [{"type": "text", "text": "(empty directory)"}]}
    truncation = truncate_head("\n".join(results), max_lines=UNLIMITED_LINES)
    output = truncation["content"]
    details: dict[str, Any] = {}
    notices: list[str] = []
    if limit_reached:
        notices.append(f"{js_number_text(limit)} entries limit reached. Use limit={js_number_text(limit * 2)} for more")
        details["entryLimitReached"] = limit
    if truncation["truncated"]:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = truncation
    return noted_result(output, notices, details)


def create_ls_tool(cwd: str) -> FunctionTool:
    """Pi's ``createLsTool(cwd)``."""

    async def execute(tool_call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        if ctx.signal.aborted:
            raise ToolError(ABORTED_MESSAGE)
        dir_path = resolve_to_cwd(args.get("path") or ".", cwd)
        limit = args.get("limit")
        return await run_blocking(lambda: _list(dir_path, DEFAULT_LIMIT if limit is None else limit), ctx.signal)

    return FunctionTool(
        name=NAME, label=NAME, description=DESCRIPTION, parameters=PARAMETERS, run=execute,
        prompt_snippet=PROMPT_SNIPPET,
    )
