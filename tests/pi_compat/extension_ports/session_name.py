"""Port of Pi's ``examples/extensions/session-name.ts``: ``pi.set_session_name`` / ``get_session_name``."""

from __future__ import annotations

from typing import Any


def register(pi: Any) -> None:
    async def session_name(args: str, ctx: Any) -> None:
        name = args.strip()
        if name:
            pi.set_session_name(name)
            ctx.ui.notify(f"Session named: {name}", "info")
        else:
            current = pi.get_session_name()
            ctx.ui.notify(f"Session: {current}" if current else "No session name set", "info")

    pi.register_command("session-name", "Set or show session name (usage: /session-name [new name])", session_name)
