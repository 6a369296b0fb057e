"""Port of ``plan-mode/utils.ts``: Pi's plan-mode helpers (safe commands, plan steps, ``[DONE:n]``)."""

from __future__ import annotations

import re
from typing import Any, TypedDict

_I = re.I
DESTRUCTIVE = [re.compile(p, f) for p, f in (
    (r"\brm\b", _I), (r"\brmdir\b", _I), (r"\bmv\b", _I), (r"\bcp\b", _I), (r"\bmkdir\b", _I), (r"\btouch\b", _I),
    (r"\bchmod\b", _I), (r"\bchown\b", _I), (r"\bchgrp\b", _I), (r"\bln\b", _I), (r"\btee\b", _I),
    (r"\btruncate\b", _I), (r"\bdd\b", _I), (r"\bshred\b", _I), (r"(^|[^<])>(?!>)", 0), (r">>", 0),
    (r"\bnpm\s+(install|uninstall|update|ci|link|publish)", _I), (r"\byarn\s+(add|remove|install|publish)", _I),
    (r"\bpnpm\s+(add|remove|install|publish)", _I), (r"\bpip\s+(install|uninstall)", _I),
    (r"\bapt(-get)?\s+(install|remove|purge|update|upgrade)", _I), (r"\bbrew\s+(install|uninstall|upgrade)", _I),
    (r"\bgit\s+(add|commit|push|pull|merge|rebase|reset|checkout|branch\s+-[dD]|stash|cherry-pick|revert|tag|init|"
     r"clone)", _I),
    (r"\bsudo\b", _I), (r"\bsu\b", _I), (r"\bkill\b", _I), (r"\bpkill\b", _I), (r"\bkillall\b", _I),
    (r"\breboot\b", _I), (r"\bshutdown\b", _I), (r"\bsystemctl\s+(start|stop|restart|enable|disable)", _I),
    (r"\bservice\s+\S+\s+(start|stop|restart)", _I), (r"\b(vim?|nano|emacs|code|subl)\b", _I))]
SAFE = [re.compile(p, f) for p, f in (
    *((rf"^\s*{word}\b", 0) for word in (
        "cat", "head", "tail", "less", "more", "grep", "find", "ls", "pwd", "echo", "printf", "wc", "sort", "uniq",
        "diff", "file", "stat", "du", "df", "tree", "which", "whereis", "type", "env", "printenv", "uname", "whoami",
        "id", "date", "cal", "uptime", "ps", "top", "htop", "free")),
    (r"^\s*git\s+(status|log|diff|show|branch|remote|config\s+--get)", _I), (r"^\s*git\s+ls-", _I),
    (r"^\s*npm\s+(list|ls|view|info|search|outdated|audit)", _I), (r"^\s*yarn\s+(list|info|why|audit)", _I),
    (r"^\s*node\s+--version", _I), (r"^\s*python\s+--version", _I), (r"^\s*curl\s", _I), (r"^\s*wget\s+-O\s*-", _I),
    (r"^\s*jq\b", 0), (r"^\s*sed\s+-n", _I), (r"^\s*awk\b", 0), (r"^\s*rg\b", 0), (r"^\s*fd\b", 0), (r"^\s*bat\b", 0),
    (r"^\s*eza\b", 0))]


class TodoItem(TypedDict):
    step: int
    text: str
    completed: bool


def is_safe_command(command: str) -> bool:
    return not any(p.search(command) for p in DESTRUCTIVE) and any(p.search(command) for p in SAFE)


def clean_step_text(text: str) -> str:
    cleaned = re.sub(r"\*{1,2}([^*]+)\*{1,2}", r"\1", text)
    cleaned = re.sub(r"`([^`]+)`", r"\1", cleaned)
    cleaned = re.sub(r"^(Use|Run|Execute|Create|Write|Read|Check|Verify|Update|Modify|Add|Remove|Delete|Install)"
                     r"\s+(the\s+)?", "", cleaned, count=1, flags=re.I)
    cleaned = re.sub(r"\s+", " ", cleaned).strip()
    if cleaned:
        cleaned = cleaned[0].upper() + cleaned[1:]
    if len(cleaned) > 50:
        cleaned = f"{cleaned[:47]}..."
    return cleaned


def extract_todo_items(message: str) -> list[TodoItem]:
    items: list[TodoItem] = []
    header = re.search(r"\*{0,2}Plan:\*{0,2}\s*\n", message, re.I)
    if header is None:
        return items
    section = message[message.index(header.group(0)) + len(header.group(0)):]
    for match in re.finditer(r"^\s*(\d+)[.)]\s+\*{0,2}([^*\n]+)", section, re.M):
        text = re.sub(r"\*{1,2}$", "", match.group(2).strip()).strip()
        if len(text) > 5 and not text.startswith(("`", "/", "-")):
            cleaned = clean_step_text(text)
            if len(cleaned) > 3:
                items.append({"step": len(items) + 1, "text": cleaned, "completed": False})
    return items


def extract_done_steps(message: str) -> list[int]:
    return [int(m.group(1)) for m in re.finditer(r"\[DONE:(\d+)\]", message, re.I)]


def mark_completed_steps(text: str, items: list[Any]) -> int:
    done = extract_done_steps(text)
    for step in done:
        item = next((t for t in items if t["step"] == step), None)
        if item is not None:
            item["completed"] = True
    return len(done)
