"""Two real project directories with different settings, AGENTS.md and an extension each."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

TAG_EXTENSION = textwrap.dedent(
    '''
    PROJECT = {project!r}


    def register(pi):
        def on_start(event, ctx):
            ctx.append_entry("project-tag", {{"project": PROJECT, "reason": event.get("reason")}})

        pi.on("session_start", on_start)
    '''
)


def make_project(root: Path, name: str, replies: int = 20) -> Path:
    """``root/name`` with ``.pi/settings.json`` (its own faux reply script), AGENTS.md and an extension."""
    project = root / name
    (project / ".pi" / "extensions").mkdir(parents=True)
    (project / ".pi" / "settings.json").write_text(json.dumps({"fauxScript": "replies.json"}))
    (project / "replies.json").write_text(json.dumps([{"text": f"reply from {name}"}] * replies))
    (project / "AGENTS.md").write_text(f"# {name}\nProject rules of {name}.\n")
    (project / ".pi" / "extensions" / "tag.py").write_text(TAG_EXTENSION.format(project=name))
    return project


def tags(tree: dict[str, Any]) -> list[str]:
    """Project names appended by the tag extensions, in file order."""
    return [e["data"]["project"] for e in tree["entries"] if e.get("type") == "custom"
            and e.get("customType") == "project-tag"]


def last_assistant_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "assistant":
            return "".join(b.get("text", "") for b in message.get("content", []) if b.get("type") == "text")
    return ""


def read_jsonl(path: str) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
