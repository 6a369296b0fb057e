"""``write``: create or overwrite a file, parent directories included (Pi's ``write.js``)."""

from __future__ import annotations

import os
from typing import Any, Final

from rpcd.core.files import NotARegularFileError, write_regular
from rpcd.tools.base import ABORTED_MESSAGE, FunctionTool, ToolCallContext, ToolResult, schema
from rpcd.tools.blocking import run_in_thread
from rpcd.tools.errors import ToolError, node_error, not_a_regular_file
from rpcd.tools.mutation_queue import file_mutation
from rpcd.tools.operations import BeforeChange, WriteText
from rpcd.tools.paths import resolve_to_cwd

NAME: Final = "write"
DESCRIPTION: Final = (
    "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates "
    "parent directories."
)
PARAMETERS: Final = schema(
    {
        "path": {"type": "string", "description": "Path to the file to write (relative or absolute)"},
        "content": {"type": "string", "description": "Content to write to the file"},
    },
    ("path", "content"),
)
PROMPT_SNIPPET: Final = "Create or overwrite files"
PROMPT_GUIDELINES: Final = ("Use write only for new files or complete rewrites.",)


def _mkdir_p(directory: str) -> None:
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as exc:  # a component that is a file: EEXIST, as Node's recursive mkdir says
        raise node_error(exc, "mkdir", directory) from None


def create_write_tool(cwd: str, *, write_text: WriteText | None = None,
                      before_change: BeforeChange | None = None) -> FunctionTool:
    """Pi's ``createWriteTool(cwd)``; ``write_text`` writes the text instead of the local disk (an editor);
    ``before_change`` is called before anything is changed (``rpcd.tools.operations``)."""

    async def execute(tool_call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        path_arg = args["path"]
        content = args["content"]
        absolute = resolve_to_cwd(path_arg, cwd)
        signal = ctx.signal

        def work() -> ToolResult:
            if signal.aborted:
                raise ToolError(ABORTED_MESSAGE)
            if before_change is not None:
                before_change(absolute)
                if signal.aborted:
                    raise ToolError(ABORTED_MESSAGE)
            _mkdir_p(os.path.dirname(absolute))
            if signal.aborted:
                raise ToolError(ABORTED_MESSAGE)
            if write_text is not None:
                write_text(absolute, content)
            else:
                try:
                    write_regular(absolute, content.encode("utf-8", "surrogatepass"))
                except NotARegularFileError:  # a FIFO would block the write for good (Pi's does)
                    raise not_a_regular_file(absolute) from None
                except OSError as exc:
                    raise node_error(exc, "open", absolute) from None
            if signal.aborted:
                raise ToolError(ABORTED_MESSAGE)
            return {"content": [{"type": "text", "text": f"Successfully wrote to {path_arg}"}]}

        async with file_mutation(absolute):
            return await run_in_thread(work)

    return FunctionTool(
        name=NAME, label=NAME, description=DESCRIPTION, parameters=PARAMETERS, run=execute,
        prompt_snippet=PROMPT_SNIPPET, prompt_guidelines=PROMPT_GUIDELINES,
    )
