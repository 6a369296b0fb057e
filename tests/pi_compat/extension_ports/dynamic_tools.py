"""Port of Pi's ``examples/extensions/dynamic-tools.ts``: tools registered in ``session_start`` and by a
command after startup, with prompt snippets and guidelines."""

from __future__ import annotations

import re
from typing import Any

ECHO_PARAMS = {"type": "object", "properties": {"message": {"type": "string", "description": "Message to echo"}},
               "required": ["message"]}


def _normalize(text: str) -> str | None:
    trimmed = text.strip().lower()
    return trimmed if trimmed and re.fullmatch(r"[a-z0-9_]+", trimmed) else None


def register(pi: Any) -> None:
    registered: set[str] = set()

    def register_echo(name: str, label: str, prefix: str) -> bool:
        if name in registered:
            return False
        registered.add(name)

        async def execute(tool_call_id: str, params: dict[str, Any], ctx: Any) -> dict[str, Any]:
            return {"content": [{"type": "text", "text": f"{prefix}{params['message']}"}],
                    "details": {"tool": name, "prefix": prefix}}

        pi.register_tool(name, f"Echo a message with prefix: {prefix}", ECHO_PARAMS, execute, label=label,
                         prompt_snippet=f"Echo back user-provided text with {prefix.strip()} prefix",
                         prompt_guidelines=["Use echo_session when the user asks for exact echo output."])
        return True

    def on_start(event: dict[str, Any], ctx: Any) -> None:
        register_echo("echo_session", "Echo Session", "[session] ")
        ctx.ui.notify("Registered dynamic tool: echo_session", "info")

    async def add_echo_tool(args: str, ctx: Any) -> None:
        name = _normalize(args)
        if name is None:
            ctx.ui.notify("Usage: /add-echo-tool <tool_name> (lowercase, numbers, underscores)", "warning")
            return
        if not register_echo(name, f"Echo {name}", f"[{name}] "):
            ctx.ui.notify(f"Tool already registered: {name}", "warning")
            return
        ctx.ui.notify(f"Registered dynamic tool: {name}", "info")

    pi.on("session_start", on_start)
    pi.register_command("add-echo-tool", "Register a new echo tool dynamically: /add-echo-tool <tool_name>",
                        add_echo_tool)
