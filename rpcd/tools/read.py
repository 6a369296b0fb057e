"""``read``: a file's text (head-truncated, with Pi's continuation notices) or an image (Pi's ``read.js``).

Lines are found in the raw bytes and only the selected window is decoded, so reading near the
end of a 50 MB file costs one ``count`` over the bytes, not a million Python strings. The text
is what Pi shows: ``Buffer.toString("utf-8")`` (invalid bytes become U+FFFD, a BOM is kept),
split on ``\\n``.
"""

from __future__ import annotations

import os
import stat
from typing import Any, Final

from rpcd.tools.base import ABORTED_MESSAGE, FunctionTool, ToolCallContext, ToolResult, schema
from rpcd.tools.blocking import run_blocking
from rpcd.tools.errors import ToolError, node_error, not_a_regular_file
from rpcd.tools.images import IMAGE_SNIFF_BYTES, detect_image_mime, image_content
from rpcd.tools.operations import ReadText
from rpcd.tools.paths import resolve_read_path
from rpcd.tools.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, format_size, truncate_head, utf8_len
from rpcd.tools.validation import js_number_text

NAME: Final = "read"
DESCRIPTION: Final = (
    "Read the contents of a file. Supports text files and images (jpg, png, gif, webp, bmp). Images are sent as "
    f"attachments. For text files, output is truncated to {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB "
    "(whichever is hit first). Use offset/limit for large files. When you need the full file, continue with offset "
    "until complete."
)
PARAMETERS: Final = schema(
    {
        "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
        "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
        "limit": {"type": "number", "description": "Maximum number of lines to read"},
    },
    ("path",),
)
PROMPT_SNIPPET: Final = "Read file contents"
PROMPT_GUIDELINES: Final = ("Use read to examine files instead of cat or sed.",)
NODE_MAX_FILE: Final = 2**31 - 1
"""Node's ``readFile`` refuses larger files (``ERR_FS_FILE_TOO_LARGE``)."""
NODE_MAX_STRING: Final = 0x1FFFFFE8
"""V8's longest string: a larger file's text cannot exist in Pi."""
_COUNT_BLOCK: Final = 1 << 20


def _read_file(path: str, limit_bytes: int | None = None) -> bytes:
    """The file's bytes as Node's ``fs.readFile`` would give them (or its error)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise node_error(exc, "open", path) from None
    try:
        try:
            info = os.fstat(fd)
        except OSError as exc:
            raise node_error(exc, "fstat") from None
        if stat.S_ISDIR(info.st_mode):
            raise ToolError("EISDIR: illegal operation on a directory, read")
        if not stat.S_ISREG(info.st_mode):
            raise not_a_regular_file(path)
        if limit_bytes is None and info.st_size > NODE_MAX_FILE:
            raise ToolError(f"File size ({info.st_size}) is greater than 2 GiB")
        os.set_blocking(fd, True)
        chunks: list[bytes] = []
        remaining = limit_bytes if limit_bytes is not None else info.st_size
        want = max(remaining, 1 << 16)
        while True:
            try:
                chunk = os.read(fd, want if limit_bytes is None else remaining)
            except OSError as exc:
                raise node_error(exc, "read") from None
            if not chunk:
                break
            chunks.append(chunk)
            if limit_bytes is not None:
                remaining -= len(chunk)
                if remaining <= 0:
                    break
            else:
                want = 1 << 20
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
    finally:
        os.close(fd)


def _check_access(path: str) -> None:
    try:
        if os.access(path, os.R_OK):
            return
        os.stat(path)  # which error: a missing path or a permission
    except OSError as exc:
        raise node_error(exc, "access", path) from None
    raise ToolError(f"EACCES: permission denied, access '{path}'")


def _line_start(data: bytes, line_index: int) -> int:
    """Byte offset where line ``line_index`` (0-based) starts; the caller checked it exists."""
    if line_index <= 0:
        return 0
    seen = 0
    block_start = 0
    size = len(data)
    while block_start < size:
        block_end = min(block_start + _COUNT_BLOCK, size)
        in_block = data.count(b"\n", block_start, block_end)
        if seen + in_block >= line_index:
            pos = block_start
            for _ in range(line_index - seen):
                pos = data.index(b"\n", pos) + 1
            return pos
        seen += in_block
        block_start = block_end
    return size


def _text_result(data: bytes, path_arg: str, offset: Any, limit: Any) -> ToolResult:
    total_lines = data.count(b"\n") + 1
    start_raw = max(0, offset - 1) if offset else 0
    start = int(start_raw)
    start_display = start_raw + 1
    if start_raw >= total_lines:
        raise ToolError(f"Offset {js_number_text(offset)} is beyond end of file ({total_lines} lines total)")
    begin = _line_start(data, start)
    user_limited: int | None = None
    if limit is not None:
        end_line = min(start_raw + limit, total_lines)
        count = max(0, int(end_line) - start)
        stop = start + count
        end = (_line_start(data, stop) - 1 if stop < total_lines else len(data)) if count else begin
        user_limited = end_line - start_raw
    else:
        end = len(data)
    selected = data[begin:end].decode("utf-8", "replace")
    truncation = truncate_head(selected)
    details: dict[str, Any] | None = None
    if truncation["firstLineExceedsLimit"]:
        first = selected.split("\n", 1)[0]
        size = format_size(utf8_len(first))
        display = js_number_text(start_display)
        text = (f"[Line {display} is {size}, exceeds {format_size(DEFAULT_MAX_BYTES)} limit. Use bash: "
                f"sed -n '{display}p' {path_arg} | head -c {DEFAULT_MAX_BYTES}]")
        details = {"truncation": truncation}
    elif truncation["truncated"]:
        end_display = start_display + truncation["outputLines"] - 1
        shown = f"{js_number_text(start_display)}-{js_number_text(end_display)} of {total_lines}"
        next_offset = js_number_text(end_display + 1)
        text = truncation["content"]
        if truncation["truncatedBy"] == "lines":
            text += f"\n\n[Showing lines {shown}. Use offset={next_offset} to continue.]"
        else:
            text += (f"\n\n[Showing lines {shown} ({format_size(DEFAULT_MAX_BYTES)} limit). "
                     f"Use offset={next_offset} to continue.]")
        details = {"truncation": truncation}
    elif user_limited is not None and start_raw + user_limited < total_lines:
        remaining = total_lines - (start_raw + user_limited)
        text = (f"{truncation['content']}\n\n[{js_number_text(remaining)} more lines in file. "
                f"Use offset={js_number_text(start_raw + user_limited + 1)} to continue.]")
    else:
        text = truncation["content"]
    result: ToolResult = {"content": [{"type": "text", "text": text}]}
    if details is not None:
        result["details"] = details
    return result


def create_read_tool(cwd: str, *, auto_resize_images: bool = True,
                     read_text: ReadText | None = None) -> FunctionTool:
    """Pi's ``createReadTool(cwd)``; ``read_text`` supplies a text file's bytes (an editor's buffer),
    images are always read from disk."""

    async def execute(tool_call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        if ctx.signal.aborted:
            raise ToolError(ABORTED_MESSAGE)
        path_arg = args["path"]
        offset = args.get("offset")
        limit = args.get("limit")

        def work() -> ToolResult:
            absolute = resolve_read_path(path_arg, cwd)
            _check_access(absolute)
            mime = detect_image_mime(_read_file(absolute, IMAGE_SNIFF_BYTES))
            if mime is not None:
                data = _read_file(absolute)
                return {"content": image_content(data, mime, auto_resize=auto_resize_images,
                                                 supports_images=ctx.model_supports_images)}
            data = read_text(absolute) if read_text is not None else _read_file(absolute)
            if len(data) > NODE_MAX_STRING:
                raise ToolError(f"Cannot create a string longer than 0x{NODE_MAX_STRING:x} characters")
            return _text_result(data, path_arg, offset, limit)

        return await run_blocking(work, ctx.signal)

    return FunctionTool(
        name=NAME, label=NAME, description=DESCRIPTION, parameters=PARAMETERS, run=execute,
        prompt_snippet=PROMPT_SNIPPET, prompt_guidelines=PROMPT_GUIDELINES,
    )
