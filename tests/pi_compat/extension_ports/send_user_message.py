"""Port of Pi's ``examples/extensions/send-user-message.ts``: ``pi.send_user_message`` from commands,
idle (starts a turn) and while streaming (``deliver_as`` steer / followUp)."""

from __future__ import annotations

from typing import Any


def register(pi: Any) -> None:
    async def ask(args: str, ctx: Any) -> None:
        if not args.strip():
            ctx.ui.notify("Usage: /ask <message>", "warning")
            return
        if not ctx.is_idle():
            ctx.ui.notify("Agent is busy. Use /steer or /followup instead.", "warning")
            return
        pi.send_user_message(args)

    async def steer(args: str, ctx: Any) -> None:
        if not args.strip():
            ctx.ui.notify("Usage: /steer <message>", "warning")
            return
        if ctx.is_idle():
            pi.send_user_message(args)
        else:
            pi.send_user_message(args, deliver_as="steer")

    async def followup(args: str, ctx: Any) -> None:
        if not args.strip():
            ctx.ui.notify("Usage: /followup <message>", "warning")
            return
        if ctx.is_idle():
            pi.send_user_message(args)
        else:
            pi.send_user_message(args, deliver_as="followUp")
            ctx.ui.notify("Follow-up queued", "info")

    async def askwith(args: str, ctx: Any) -> None:
        if not args.strip():
            ctx.ui.notify("Usage: /askwith <message>", "warning")
            return
        if not ctx.is_idle():
            ctx.ui.notify("Agent is busy", "warning")
            return
        pi.send_user_message([
            {"type": "text", "text": f"User request: {args}"},
            {"type": "text", "text": "Please respond concisely."},
        ])

    pi.register_command("ask", "Send a user message to the agent", ask)
    pi.register_command("steer", "Send a steering message (interrupts current processing)", steer)
    pi.register_command("followup", "Queue a follow-up message (waits for current processing)", followup)
    pi.register_command("askwith", "Send a user message with structured content", askwith)
