"""``rpcctl doctor``: what the daemon would start with, and what is wrong with it.

The files are checked here (found? valid JSON?); everything that needs the daemon's own rules is
asked of a real daemon started on the same options: its startup diagnostics (a broken
``models.json``, settings, a failing extension), the models usable now (= providers with
credentials), the session's directory, and whether the project needs a trust decision (the
daemon asks ``host/authorizeProject`` only for an undecided project with code to load; doctor
records the question and answers ``deny``, so nothing is remembered).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

FILES = ("settings.json", "models.json", "auth.json", "trust.json")


def agent_dir(given: str | None) -> Path:
    """The agent dir as the daemon resolves it: the option, ``$PI_CODING_AGENT_DIR``, ``~/.pi/agent``."""
    return Path(os.path.expanduser(given or os.environ.get("PI_CODING_AGENT_DIR") or "~/.pi/agent"))


def file_report(path: Path, diagnostics: list[dict[str, Any]]) -> dict[str, Any]:
    """Found or not, and whether the daemon could use it: its own warnings name the file (the daemon
    reads each as Pi does — models.json with comments, settings merged — so its word is the one that
    counts, never a second parser's here)."""
    if not path.exists():
        return {"path": str(path), "found": False}
    problems = [str(d.get("message")) for d in diagnostics
                if d.get("type") in ("warning", "error") and str(path) in str(d.get("message", ""))]
    if problems:
        return {"path": str(path), "found": True, "valid": False, "problem": problems[0]}
    return {"path": str(path), "found": True, "valid": True}


def credential_sources(models: dict[str, Any]) -> dict[str, str]:
    """provider -> where its key comes from (``getAvailableModels``' ``credentialSource``)."""
    out: dict[str, str] = {}
    for model in models.get("models") or ():
        if isinstance(model, dict):
            offline = model.get("provider") == "faux"
            out.setdefault(str(model.get("provider")),
                           "no key: the offline model" if offline else str(model.get("credentialSource") or "?"))
    return out


def describe_source(source: str) -> str:
    if source.isupper() or ("_" in source and " " not in source):
        return f"${source}"
    return source


class TrustProbe:
    """The ``host/authorizeProject`` handler of a doctor run: records, answers deny."""

    def __init__(self) -> None:
        self.asked: dict[str, Any] | None = None

    def handler(self) -> Callable[[Any], Awaitable[dict[str, Any]]]:
        async def authorize(params: Any) -> dict[str, Any]:
            self.asked = dict(params) if isinstance(params, dict) else {}
            return {"decision": "deny"}

        return authorize


def report(agent: Path, cwd: str, state: dict[str, Any], models: dict[str, Any], diagnostics: list[dict[str, Any]],
           probe: TrustProbe) -> dict[str, Any]:
    files = {name: file_report(agent / name, diagnostics) for name in FILES}
    project_settings = Path(cwd) / ".pi" / "settings.json"
    files["project settings.json"] = file_report(project_settings, diagnostics)
    sources = credential_sources(models)
    providers = sorted(sources)
    session_file = state.get("sessionFile")
    if probe.asked is None:
        trust = {"decided": True, "detail": "trusted, or nothing in the project needs trust"}
    else:
        trust = {"decided": False, "reasons": probe.asked.get("reasons") or [],
                 "detail": f"not trusted yet: project settings/extensions are ignored until you trust it "
                           f"(`rpcctl trust add {cwd}`, or /trust in chat)"}
    problems = [d for d in diagnostics if d.get("type") in ("warning", "error")]
    servers = [s for s in state.get("mcpServers") or () if isinstance(s, dict)]
    problems += [{"type": "warning", "message": f"MCP server {s.get('name')} is {s.get('status')}: "
                                                f"{s.get('lastError') or 'no error recorded'}"}
                 for s in servers if s.get("status") != "ready"]
    if not [p for p in providers if p != "faux"]:
        problems.append({"type": "warning", "message": "no provider has credentials (only the offline faux model)"})
    return {
        "agentDir": str(agent),
        "agentDirExists": agent.is_dir(),
        "cwd": cwd,
        "sessionDir": os.path.dirname(session_file) if isinstance(session_file, str) else None,
        "files": files,
        "providers": providers,
        "credentials": sources,
        "model": state.get("model"),
        "trust": trust,
        "mcpServers": servers,
        "diagnostics": diagnostics,
        "ok": not [p for p in problems if p.get("type") == "error"] and all(
            f.get("valid") is not False for f in files.values()),
        "problems": problems,
    }


def human(result: dict[str, Any]) -> str:
    model = result.get("model") or {}
    trust = result["trust"]
    reasons = f" ({', '.join(trust['reasons'])})" if trust.get("reasons") else ""
    rows = [("agent dir", result["agentDir"] + ("" if result["agentDirExists"] else "  (does not exist yet)")),
            ("cwd", result["cwd"]),
            ("session dir", result["sessionDir"] or "(in memory)")]
    for name, found in result["files"].items():
        status = "missing" if not found["found"] else ("ok" if found["valid"] else f"NOT USED: {found['problem']}")
        rows.append((name, f"{status}  {found['path']}"))
    credentials = result.get("credentials") or {}
    rows.append(("providers", ", ".join(
        f"{p} ({credentials[p]})" if p == "faux" else f"{p} (key from {describe_source(credentials.get(p, '?'))})"
        for p in result["providers"]) or "(none with credentials)"))
    rows.append(("model", f"{model.get('provider')}/{model.get('modelId')}" if model else "-"))
    rows.append(("trust", trust["detail"] + reasons))
    for server in result.get("mcpServers") or ():
        tools = len(server.get("tools") or ())
        rows.append((f"mcp {server.get('name')}", f"{server.get('status')}  {server.get('transport')} "
                                                 f"{server.get('target')}  ({tools} tools)"))
    lines = [f"{key:<22} {value}" for key, value in rows]
    lines += [f"{problem.get('type')}: {problem.get('message')}" for problem in result["problems"]]
    lines.append("ok" if result["ok"] else "problems found")
    return "\n".join(lines)
