"""Port of Pi's ``examples/extensions/shutdown-command.ts``: ``ctx.shutdown()`` from a command and tools."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def register(pi: Any) -> None:
    async def quit_command(args: str, ctx: Any) -> None:
        ctx.shutdown()

    async def finish_and_exit(tool_call_id: str, params: dict[str, Any], signal: Any,
                              on_update: Callable[[dict[str, Any]], None] | None, ctx: Any) -> dict[str, Any]:
        ctx.shutdown()
        return {"content": [{"type": "text", "text": "Shutdown requested. Exiting after this response."}],
                "details": {}}

    async def deploy_and_exit(tool_call_id: str, params: dict[str, Any], signal: Any,
                              on_update: Callable[[dict[str, Any]], None] | None, ctx: Any) -> dict[str, Any]:
        if on_update is not None:
            on_update({"content": [{"type": "text", "text": f"Deploying to {params['environment']}..."}],
                       "details": {}})
            on_update({"content": [{"type": "text", "text": "Deployment complete, exiting..."}], "details": {}})
        ctx.shutdown()
        return {"content": [{"type": "text", "text": "Done! Shutdown requested."}],
                "details": {"environment": params["environment"]}}

    pi.register_command("quit", "Exit pi cleanly", quit_command)
    pi.register_tool("finish_and_exit", "Complete a task and exit pi", {"type": "object", "properties": {}},
                     finish_and_exit, label="Finish and Exit")
    pi.register_tool(
        "deploy_and_exit", "Deploy the application and exit pi",
        {"type": "object", "properties": {
            "environment": {"type": "string", "description": "Target environment (e.g., production, staging)"}},
         "required": ["environment"]},
        deploy_and_exit, label="Deploy and Exit")
