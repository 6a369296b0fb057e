"""Port of Pi's ``examples/extensions/trigger-compact.ts``: ``ctx.compact()`` from ``turn_end`` and a
command, with ``ctx.get_context_usage()``."""

from __future__ import annotations

from typing import Any

COMPACT_THRESHOLD_TOKENS = 100_000


def register(pi: Any) -> None:
    previous: list[int | None] = []

    def trigger(ctx: Any, custom_instructions: str | None = None) -> None:
        if ctx.has_ui:
            ctx.ui.notify("Compaction started", "info")

        def done(result: Any) -> None:
            if ctx.has_ui:
                ctx.ui.notify("Compaction completed", "info")

        def failed(error: BaseException) -> None:
            if ctx.has_ui:
                ctx.ui.notify(f"Compaction failed: {error}", "error")

        ctx.compact(custom_instructions=custom_instructions, on_complete=done, on_error=failed)

    def on_turn_end(event: dict[str, Any], ctx: Any) -> None:
        usage = ctx.get_context_usage()
        tokens = usage["tokens"] if usage is not None else None
        if tokens is None:
            return
        crossed = bool(previous) and previous[0] is not None and previous[0] <= COMPACT_THRESHOLD_TOKENS
        previous[:] = [tokens]
        if not crossed or tokens <= COMPACT_THRESHOLD_TOKENS:
            return
        trigger(ctx)

    async def command(args: str, ctx: Any) -> None:
        trigger(ctx, args.strip() or None)

    pi.on("turn_end", on_turn_end)
    pi.register_command("trigger-compact", "Trigger compaction immediately", command)
