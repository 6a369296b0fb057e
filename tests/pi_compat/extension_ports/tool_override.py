"""Port of Pi's ``examples/extensions/tool-override.ts``: the built-in ``read`` replaced by an audited
one that logs every access to ``<agentDir>/read-access.log`` and blocks sensitive paths."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime
from typing import Any

BLOCKED = [re.compile(p, f) for p, f in (
    (r"\.env$", 0), (r"\.env\..+$", 0), (r"secrets?\.(json|yaml|yml|toml)$", re.I),
    (r"credentials?\.(json|yaml|yml|toml)$", re.I), (r"/\.ssh/", 0), (r"/\.aws/", 0), (r"/\.gnupg/", 0))]
READ_SCHEMA = {"type": "object", "properties": {
    "path": {"type": "string", "description": "Path to the file to read (relative or absolute)"},
    "offset": {"type": "number", "description": "Line number to start reading from (1-indexed)"},
    "limit": {"type": "number", "description": "Maximum number of lines to read"},
}, "required": ["path"]}


def _resolve(cwd: str, path: str) -> str:
    """Node's ``path.resolve(cwd, path)``."""
    return os.path.normpath(os.path.join(cwd, path))


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _iso_now() -> str:
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def register(pi: Any) -> None:
    log_file = os.path.join(pi.agent_dir, "read-access.log")

    def log_access(path: str, allowed: bool, reason: str | None = None) -> None:  # Pi: appendFile, errors ignored
        status = "ALLOWED" if allowed else "BLOCKED"
        suffix = f" ({reason})" if reason else ""
        try:
            with open(log_file, "a", encoding="utf-8") as log:
                log.write(f"[{_iso_now()}] {status}: {path}{suffix}\n")
        except OSError:
            pass

    async def execute(tool_call_id: str, params: dict[str, Any], ctx: Any) -> dict[str, Any]:
        path = params["path"]
        offset, limit = params.get("offset"), params.get("limit")
        absolute = _resolve(ctx.cwd, path)
        if any(pattern.search(absolute) for pattern in BLOCKED):
            log_access(absolute, False, "matches blocked pattern")
            text = (f'Access denied: "{path}" matches a blocked pattern (sensitive file). This tool blocks access '
                    "to .env files, secrets, credentials, and SSH/AWS/GPG directories.")
            return {"content": [{"type": "text", "text": text}], "details": {"blocked": True}}
        log_access(absolute, True)
        try:
            content = _read(absolute)
        except OSError as error:
            code = {2: "ENOENT", 13: "EACCES", 21: "EISDIR"}.get(error.errno or 0, "EIO")
            return {"content": [{"type": "text", "text": f"Error reading file: {code}: {error.strerror.lower()}, "
                                                          f"access '{absolute}'"}],
                    "details": {"error": True}}
        lines = content.split("\n")
        start = max(0, int(offset) - 1) if offset else 0
        end = start + int(limit) if limit else len(lines)
        text = "\n".join(lines[start:end])
        if len(text.encode("utf-8")) > 50 * 1024:
            text = f"{text[:50 * 1024]}\n\n[Output truncated at 50KB]"
        return {"content": [{"type": "text", "text": text}], "details": {"lines": len(lines)}}

    async def read_log(args: str, ctx: Any) -> None:
        try:
            entries = _read(log_file).strip().split("\n")[-20:]
        except OSError:
            ctx.ui.notify("No access log found", "info")
            return
        ctx.ui.notify("Recent file access:\n" + "\n".join(entries), "info")

    pi.register_tool("read", "Read the contents of a file with access logging. Some sensitive paths (.env, secrets, "
                     "credentials) are blocked.", READ_SCHEMA, execute, label="read (audited)")
    pi.register_command("read-log", "View the file access log", read_log)
