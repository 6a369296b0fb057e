"""``grep``: ripgrep over the project with Pi's flags, limits and formatting (Pi's ``grep.js``).

``rg --json --line-number --color=never --hidden`` (+ ``--ignore-case``, ``--fixed-strings``,
``--glob``); matches are collected until ``limit`` (then rg is stopped), formatted as
``path:line: text`` (context lines ``path-line- text``), long lines cut at 500 characters,
the whole output cut at 50 KB, and Pi's notices appended. Like Pi, file order is ripgrep's
(parallel: not sorted).
"""

from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import threading
from typing import Any, Final

import anyio
import anyio.to_thread
import orjson

from rpcd.tools.base import ABORTED_MESSAGE, FunctionTool, ToolCallContext, ToolResult, noted_result, schema
from rpcd.tools.binaries import ripgrep_path
from rpcd.tools.errors import ToolError
from rpcd.tools.paths import resolve_to_cwd
from rpcd.tools.truncate import (
    DEFAULT_MAX_BYTES,
    GREP_MAX_LINE_LENGTH,
    UNLIMITED_LINES,
    format_size,
    truncate_head,
    truncate_line,
)
from rpcd.tools.validation import js_number_text

NAME: Final = "grep"
DEFAULT_LIMIT: Final = 100
DESCRIPTION: Final = (
    "Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects "
    f".gitignore. Output is truncated to {DEFAULT_LIMIT} matches or {DEFAULT_MAX_BYTES // 1024}KB (whichever is hit "
    f"first). Long lines are truncated to {GREP_MAX_LINE_LENGTH} chars."
)
PARAMETERS: Final = schema(
    {
        "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
        "path": {"type": "string", "description": "Directory or file to search (default: current directory)"},
        "glob": {"type": "string", "description": "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'"},
        "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
        "literal": {"type": "boolean",
                    "description": "Treat pattern as literal string instead of regex (default: false)"},
        "context": {"type": "number",
                    "description": "Number of lines to show before and after each match (default: 0)"},
        "limit": {"type": "number", "description": f"Maximum number of matches to return (default: {DEFAULT_LIMIT})"},
    },
    ("pattern",),
)
PROMPT_SNIPPET: Final = "Search file contents for patterns (respects .gitignore)"


def _js_relative(base: str, target: str) -> str:
    """Node's ``path.relative`` for two absolute normalized paths."""
    return os.path.relpath(target, base) if target != base else ""


class _Search:
    def __init__(self, search_path: str, is_directory: bool, context: int) -> None:
        self.search_path = search_path
        self.is_directory = is_directory
        self.context = context
        self.lines_truncated = False
        self._files: dict[str, list[str]] = {}

    def format_path(self, file_path: str) -> str:
        if self.is_directory:
            relative = _js_relative(self.search_path, file_path)
            if relative and not relative.startswith(".."):
                return relative
        return os.path.basename(file_path)

    def _file_lines(self, file_path: str) -> list[str]:
        lines = self._files.get(file_path)
        if lines is None:
            try:
                with open(file_path, "rb") as handle:
                    text = handle.read().decode("utf-8", "replace")
                lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            except OSError:
                lines = []
            self._files[file_path] = lines
        return lines

    def _cut(self, text: str) -> str:
        cut, was = truncate_line(text)
        if was:
            self.lines_truncated = True
        return cut

    def block(self, file_path: str, line_number: int) -> list[str]:
        relative = self.format_path(file_path)
        lines = self._file_lines(file_path)
        if not lines:
            return [f"{relative}:{line_number}: (unable to read file)"]
        start = max(1, line_number - self.context) if self.context > 0 else line_number
        end = min(len(lines), line_number + self.context) if self.context > 0 else line_number
        out: list[str] = []
        for current in range(start, end + 1):
            text = self._cut((lines[current - 1] if 0 < current <= len(lines) else "").replace("\r", ""))
            out.append(f"{relative}:{current}: {text}" if current == line_number else f"{relative}-{current}- {text}")
        return out


def create_grep_tool(cwd: str) -> FunctionTool:
    """Pi's ``createGrepTool(cwd)``."""

    async def execute(tool_call_id: str, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        signal = ctx.signal
        if signal.aborted:
            raise ToolError(ABORTED_MESSAGE)
        rg = ripgrep_path()
        if rg is None:
            raise ToolError("ripgrep (rg) is not available and could not be downloaded")
        search_path = resolve_to_cwd(args.get("path") or ".", cwd)
        try:
            is_directory = stat.S_ISDIR(os.stat(search_path).st_mode)
        except OSError:
            raise ToolError(f"Path not found: {search_path}") from None
        context_arg = args.get("context")
        context = int(context_arg) if context_arg and context_arg > 0 else 0
        limit_arg = args.get("limit")
        limit = max(1, DEFAULT_LIMIT if limit_arg is None else limit_arg)
        command = [rg, "--json", "--line-number", "--color=never", "--hidden"]
        if args.get("ignoreCase"):
            command.append("--ignore-case")
        if args.get("literal"):
            command.append("--fixed-strings")
        if args.get("glob"):
            command += ["--glob", args["glob"]]
        command += ["--", args["pattern"], search_path]
        run = _RipgrepRun(command, limit)
        async with anyio.create_task_group() as group:

            async def watch_abort() -> None:
                await signal.wait()
                run.stop(aborted=True)

            async def work() -> None:
                await anyio.to_thread.run_sync(run.run, abandon_on_cancel=True)
                group.cancel_scope.cancel()

            group.start_soon(watch_abort)
            group.start_soon(work)
        if run.spawn_error is not None:
            raise ToolError(f"Failed to run ripgrep: {run.spawn_error}")
        aborted = run.aborted or signal.aborted
        matches, match_count, limit_reached, code = run.matches, run.match_count, run.limit_reached, run.code
        stderr = run.stderr
        if aborted:
            raise ToolError(ABORTED_MESSAGE)
        if not limit_reached and code not in (0, 1):
            message = stderr.decode("utf-8", "replace").strip() or f"ripgrep exited with code {code}"
            raise ToolError(message)
        if match_count == 0:
            return {"content": [{"type": "text", "text": "No matches found"}]}
        search = _Search(search_path, is_directory, context)
        output_lines: list[str] = []
        for file_path, line_number, line_text in matches:
            if context == 0 and line_text is not None:
                sanitized = line_text.replace("\r\n", "\n").replace("\r", "")
                if sanitized.endswith("\n"):
                    sanitized = sanitized[:-1]
                output_lines.append(f"{search.format_path(file_path)}:{line_number}: {search._cut(sanitized)}")
            else:
                output_lines.extend(search.block(file_path, line_number))
        truncation = truncate_head("\n".join(output_lines), max_lines=UNLIMITED_LINES)
        output = truncation["content"]
        details: dict[str, Any] = {}
        notices: list[str] = []
        if limit_reached:
            notices.append(f"{js_number_text(limit)} matches limit reached. Use limit={js_number_text(limit * 2)} for "
                           "more, or refine pattern")
            details["matchLimitReached"] = limit
        if truncation["truncated"]:
            notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
            details["truncation"] = truncation
        if search.lines_truncated:
            notices.append(f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines")
            details["linesTruncated"] = True
        return noted_result(output, notices, details)

    return FunctionTool(
        name=NAME, label=NAME, description=DESCRIPTION, parameters=PARAMETERS, run=execute,
        prompt_snippet=PROMPT_SNIPPET,
    )


class _RipgrepRun:
    """One ``rg --json`` run in a worker thread (a plain ``Popen``: cheaper to start than an
    asyncio subprocess), collecting matches until the limit, then stopping rg."""

    def __init__(self, command: list[str], limit: int | float) -> None:
        self.command = command
        self.limit = limit
        self.matches: list[tuple[str, int, str | None]] = []
        self.match_count = 0
        self.limit_reached = False
        self.aborted = False
        self.code: int | None = None
        self.stderr = bytearray()
        self.spawn_error: str | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def stop(self, *, aborted: bool = False) -> None:
        with self._lock:
            if aborted:
                self.aborted = True
            process = self._process
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                process.terminate()

    def run(self) -> None:
        try:
            process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, close_fds=False)
        except OSError as exc:
            self.spawn_error = exc.strerror or str(exc)
            return
        with self._lock:
            self._process = process
            stop_now = self.aborted
        if stop_now:
            self.stop()
        assert process.stdout is not None and process.stderr is not None
        errors = process.stderr
        reader = threading.Thread(target=lambda: self.stderr.extend(errors.read()), daemon=True)
        reader.start()
        limit = self.limit
        for line in process.stdout:
            if self.match_count >= limit or not line.strip():
                continue
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if not isinstance(event, dict) or event.get("type") != "match":
                continue
            self.match_count += 1
            data = event.get("data") or {}
            file_path = (data.get("path") or {}).get("text")
            line_number = data.get("line_number")
            line_text = (data.get("lines") or {}).get("text")
            if file_path and isinstance(line_number, int):
                self.matches.append((file_path, line_number, line_text))
            if self.match_count >= limit:
                self.limit_reached = True
                self.stop()
        self.code = process.wait()
        reader.join()
        process.stdout.close()
        errors.close()
