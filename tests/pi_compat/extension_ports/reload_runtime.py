"""Port of Pi's ``examples/extensions/reload-runtime.ts``: ``await ctx.reload()`` from a command, and a
tool that queues that command as a follow-up."""

from __future__ import annotations

from typing import Any


def register(pi: Any) -> None:
    async def reload_runtime(args: str, ctx: Any) -> None:
        await ctx.reload()

    async def execute(tool_call_id: str, params: dict[str, Any], ctx: Any) -> dict[str, Any]:
        pi.send_user_message("/reload-runtime", deliver_as="followUp")
        return {"content": [{"type": "text", "text": "Queued /reload-runtime as a follow-up command."}],
                "details": {}}

    pi.register_command("reload-runtime", "Reload extensions, skills, prompts, themes, and context files",
                        reload_runtime)
    pi.register_tool("reload_runtime", "Reload extensions, skills, prompts, themes, and context files",
                     {"type": "object", "properties": {}}, execute, label="Reload Runtime")
