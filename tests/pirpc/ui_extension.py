"""The extension UI round trip of tests/pirpc/test_against_pi.py, for rpcd (``ui_extension.mjs`` is the
same extension for real Pi): ``/ask`` opens every dialog and sends every fire-and-forget request."""

import json


def register(pi):
    async def ask(args, ctx):
        choice = await ctx.ui.select("Pick one", ["alpha", "beta"])
        sure = await ctx.ui.confirm("Sure?", f"about {args}")
        name = await ctx.ui.input("Your name", "type it")
        text = await ctx.ui.editor("Edit this", "line 1\nline 2")
        late = await ctx.ui.select("Too late", ["x", "y"], timeout=0.3)
        never = await ctx.ui.confirm("Timed confirm", "nobody answers", timeout=0.3)
        results = json.dumps([choice, sure, name, text, late, never], separators=(",", ":"))
        ctx.ui.notify(f"results {results}", "info")
        ctx.ui.notify("careful", "warning")
        ctx.ui.set_status("ask", "asking")
        ctx.ui.set_status("ask", None)
        ctx.ui.set_widget("ask", ["one", "two"], placement="belowEditor")
        ctx.ui.set_widget("ask", None, placement="aboveEditor")
        ctx.ui.set_title("asked")
        ctx.ui.set_editor_text("prefilled")

    async def boom(args, ctx):
        raise RuntimeError("boom went the command")

    pi.register_command("ask", "every extension UI request", ask)
    pi.register_command("boom", "a command that fails", boom)
