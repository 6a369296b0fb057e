"""``edit``: exact, unique text replacements in one file (Pi's ``edit.js``).

Every ``edits[].oldText`` is matched against the original (BOM stripped, line endings
normalized to LF); the file is written back with its BOM and its dominant line ending; the
result carries Pi's numbered diff, unified patch and first changed line. Edits and writes to
one file run one at a time (``mutation_queue``).
"""

from __future__ import annotations

import json
import os
from typing import Any, Final

from rpcd.core.files import NotARegularFileError, read_regular, write_regular
from rpcd.tools.base import ABORTED_MESSAGE, AbortSignal, FunctionTool, ToolCallContext, ToolResult, schema
from rpcd.tools.blocking import run_in_thread
from rpcd.tools.edit_diff import (
    apply_edits,
    detect_line_ending,
    generate_diff_string,
    generate_unified_patch,
    normalize_to_lf,
    restore_line_endings,
    split_bom,
)
from rpcd.tools.errors import ToolError, errno_code, node_error, not_a_regular_file
from rpcd.tools.mutation_queue import file_mutation
from rpcd.tools.operations import BeforeChange, ReadText, WriteText
from rpcd.tools.paths import resolve_to_cwd

NAME: Final = "edit"
DESCRIPTION: Final = (
    "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, non-overlapping "
    "region of the original file. If two changes affect the same block or nearby lines, merge them into one edit "
    "instead of emitting overlapping edits. Do not include large unchanged regions just to connect distant changes."
)
_REPLACE_EDIT: Final = {
    "type": "object",
    "required": ["oldText", "newText"],
    "properties": {
        "oldText": {
            "type": "string",
            "description": "Exact text for one targeted replacement. It must be unique in the original file and must "
            "not overlap with any other edits[].oldText in the same call.",
        },
        "newText": {"type": "string", "description": "Replacement text for this targeted edit."},
    },
}
PARAMETERS: Final = schema(
    {
        "path": {"type": "string", "description": "Path to the file to edit (relative or absolute)"},
        "edits": {
            "type": "array",
            "items": _REPLACE_EDIT,
            "description": "One or more targeted replacements. Each edit is matched against the original file, not "
            "incrementally. Do not include overlapping or nested edits. If two changes touch the same block or "
            "nearby lines, merge them into one edit instead.",
        },
    },
    ("path", "edits"),
)
PROMPT_SNIPPET: Final = (
    "Make precise file edits with exact text replacement, including multiple disjoint edits in one call"
)
PROMPT_GUIDELINES: Final = (
    "Use edit for precise changes (edits[].oldText must match exactly)",
    "When changing multiple separate locations in one file, use one edit call with multiple entries in edits[] "
    "instead of multiple edit calls",
    "Each edits[].oldText is matched against the original file, not after earlier edits are applied. Do not emit "
    "overlapping or nested edits. Merge nearby changes into one edit.",
    "Keep edits[].oldText as small as possible while still being unique in the file. Do not pad with large "
    "unchanged regions.",
)


def _is_single_edit(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("oldText"), str) and isinstance(value.get("newText"), str)


def prepare_edit_arguments(args: dict[str, Any]) -> dict[str, Any]:
    """``prepareEditArguments``: ``edits`` sent as a JSON string or a single object, and the legacy
    top-level ``oldText``/``newText``, become an ``edits`` array."""
    if not isinstance(args, dict):
        return args
    edits = args.get("edits")
    if isinstance(edits, str):
        try:
            parsed = json.loads(edits)
        except ValueError:
            parsed = None
        if isinstance(parsed, list):
            args["edits"] = parsed
        elif _is_single_edit(parsed):
            args["edits"] = [parsed]
    elif _is_single_edit(edits):
        args["edits"] = [edits]
    if not isinstance(args.get("oldText"), str) or not isinstance(args.get("newText"), str):
        return args
    merged = list(args["edits"]) if isinstance(args.get("edits"), list) else []
    merged.append({"oldText": args["oldText"], "newText": args["newText"]})
    rest = {k: v for k, v in args.items() if k not in ("oldText", "newText")}
    rest["edits"] = merged
    return rest


def _check(signal: AbortSignal) -> None:
    if signal.aborted:
        raise ToolError(ABORTED_MESSAGE)


def create_edit_tool(cwd: str, *, read_text: ReadText | None = None,
                     write_text: WriteText | None = None, before_change: BeforeChange | None = None) -> FunctionTool:
    """Pi's ``createEditTool(cwd)``; ``read_text`` / ``write_text`` read and write the text instead of
    the local disk (an editor: its unsaved buffer in, its review out); ``before_change`` is called
    before the file is read and changed (``rpcd.tools.operations``)."""

    async def execute(tool_call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        edits = args.get("edits")
        if not isinstance(edits, list) or not edits:
            raise ToolError("Edit tool input is invalid. edits must contain at least one replacement.")
        path_arg = args["path"]
        absolute = resolve_to_cwd(path_arg, cwd)
        signal = ctx.signal

        def work() -> ToolResult:
            _check(signal)
            if before_change is not None:
                before_change(absolute)
                _check(signal)
            if not os.access(absolute, os.R_OK | os.W_OK):
                try:
                    os.stat(absolute)
                    code = "EACCES"
                except OSError as exc:
                    code = errno_code(exc)
                raise ToolError(f"Could not edit file: {path_arg}. Error code: {code}.")
            if read_text is not None:
                raw = read_text(absolute)
            else:
                try:
                    raw = read_regular(absolute)
                except IsADirectoryError as exc:
                    raise node_error(exc, "read") from None
                except NotARegularFileError:  # a FIFO would block the read for good (Pi's does)
                    raise not_a_regular_file(absolute) from None
                except OSError as exc:
                    raise node_error(exc, "open", absolute) from None
            _check(signal)
            bom, content = split_bom(raw.decode("utf-8", "replace"))
            ending = detect_line_ending(content)
            normalized = normalize_to_lf(content)
            base, new = apply_edits(normalized, edits, path_arg)
            _check(signal)
            final = bom + restore_line_endings(new, ending)
            if write_text is not None:
                write_text(absolute, final)
            else:
                try:
                    write_regular(absolute, final.encode("utf-8", "surrogatepass"))
                except NotARegularFileError:
                    raise not_a_regular_file(absolute) from None
                except OSError as exc:
                    raise node_error(exc, "open", absolute) from None
            _check(signal)
            diff, first_changed = generate_diff_string(base, new)
            details: dict[str, Any] = {"diff": diff, "patch": generate_unified_patch(path_arg, base, new)}
            if first_changed is not None:
                details["firstChangedLine"] = first_changed
            text = f"Successfully replaced {len(edits)} block(s) in {path_arg}."
            return {"content": [{"type": "text", "text": text}], "details": details}

        async with file_mutation(absolute):
            # not abandoned on abort: the queue stays held until the write has settled (as in Pi)
            return await run_in_thread(work)

    return FunctionTool(
        name=NAME, label=NAME, description=DESCRIPTION, parameters=PARAMETERS, run=execute,
        prompt_snippet=PROMPT_SNIPPET, prompt_guidelines=PROMPT_GUIDELINES, prepare=prepare_edit_arguments,
    )
