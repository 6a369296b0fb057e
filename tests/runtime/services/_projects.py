"""Builders for real project and agent directories on disk (no mocks)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def write_json(path: Path, data: Any) -> Path:
    return write(path, json.dumps(data))


def recording_extension(marker_dir: Path, label: str) -> str:
    """Source of an extension that writes ``<marker_dir>/<label>.imported`` when imported and
    records the cwd it was registered for, so tests can prove whether code ran."""
    return f"""
    import pathlib
    pathlib.Path({str(marker_dir)!r}, {label + '.imported'!r}).write_text("x")
    LABEL = {label!r}

    def register(pi):
        pathlib.Path({str(marker_dir)!r}, {label + '.registered'!r}).write_text(pi.cwd)
        pi.on("session_start", lambda event, ctx: None)
        async def execute(tool_call_id, args, ctx):
            return {{"content": [{{"type": "text", "text": LABEL + ":" + ctx.cwd}}]}}
        pi.register_tool("who_" + LABEL, "says which extension answered", {{"type": "object"}}, execute)
    """


def make_project(root: Path, name: str, marker_dir: Path, *, settings: dict[str, Any] | None = None) -> Path:
    """A project with ``.pi/settings.json``, ``AGENTS.md`` and ``.pi/extensions/ext.py``."""
    project = root / name
    write_json(project / ".pi" / "settings.json", settings if settings is not None else {"theme": name})
    write(project / "AGENTS.md", f"instructions of {name}\n")
    write(project / ".pi" / "extensions" / "ext.py", recording_extension(marker_dir, name))
    return project
