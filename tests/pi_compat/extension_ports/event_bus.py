"""Port of Pi's ``examples/extensions/event-bus.ts``: ``pi.events`` between handlers and commands."""

from __future__ import annotations

from typing import Any


def register(pi: Any) -> None:
    current: list[Any] = []

    def remember(event: dict[str, Any], ctx: Any) -> None:
        current[:] = [ctx]

    def on_notification(data: Any) -> None:
        if current:
            current[0].ui.notify(f"Event from {data['from']}: {data['message']}", "info")

    async def emit(args: str, ctx: Any) -> None:
        pi.events.emit("my:notification", {"message": args.strip() or "hello", "from": "/emit command"})

    def announce(event: dict[str, Any], ctx: Any) -> None:
        pi.events.emit("my:notification", {"message": "Session started", "from": "event-bus-example"})

    pi.on("session_start", remember)
    pi.events.on("my:notification", on_notification)
    pi.register_command("emit", "Emit my:notification event (usage: /emit message)", emit)
    pi.on("session_start", announce)
