"""Port of Pi's ``examples/extensions/plan-mode``: read-only exploration with ``/plan``, a ``--plan``
flag, the active-tool set switched, bash limited to an allowlist, the plan's steps extracted and
tracked (``[DONE:n]``), context injected with ``before_agent_start`` and filtered with ``context``,
state persisted with ``append_entry`` and restored in ``session_start``."""

from __future__ import annotations

from typing import Any

from .utils import extract_todo_items, is_safe_command, mark_completed_steps

PLAN_MODE_TOOLS = ["read", "bash", "grep", "find", "ls", "questionnaire"]
NORMAL_MODE_TOOLS = ["read", "bash", "edit", "write"]
PLAN_MODE_DISABLED_TOOLS = {"edit", "write"}
PLAN_MANAGED_TOOLS = {*PLAN_MODE_TOOLS, *NORMAL_MODE_TOOLS}
UNCHECKED, DONE, OPEN = "\u2610 ", "\u2713", "\u25cb"
PLAN_CONTEXT = """[PLAN MODE ACTIVE]
You are in plan mode - a read-only exploration mode for safe code analysis.

Restrictions:
- Built-in edit and write tools are disabled
- Other currently active tools remain available
- Bash is restricted to an allowlist of read-only commands

Ask clarifying questions using the questionnaire tool.
Use brave-search skill via bash for web research.

Create a detailed numbered plan under a "Plan:" header:

Plan:
1. First step description
2. Second step description
...

Do NOT attempt to make changes - just describe what you would do."""


def _is_assistant(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") == "assistant" and isinstance(message.get("content"), list)


def _text(message: dict[str, Any]) -> str:
    return "\n".join(b["text"] for b in message["content"] if b.get("type") == "text")


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def register(pi: Any) -> None:
    s: dict[str, Any] = {"plan": False, "executing": False, "todos": [], "before": None}

    pi.register_flag("plan", type="boolean", default=False, description="Start in plan mode (read-only exploration)")

    def update_status(ctx: Any) -> None:
        theme = ctx.ui.theme
        todos = s["todos"]
        if s["executing"] and todos:
            completed = sum(1 for t in todos if t["completed"])
            ctx.ui.set_status("plan-mode", theme.fg("accent", f"\U0001f4cb {completed}/{len(todos)}"))
        elif s["plan"]:
            ctx.ui.set_status("plan-mode", theme.fg("warning", "\u23f8 plan"))
        else:
            ctx.ui.set_status("plan-mode", None)
        if s["executing"] and todos:
            lines = [theme.fg("success", "\u2611 ") + theme.fg("muted", theme.strikethrough(t["text"]))
                     if t["completed"] else theme.fg("muted", UNCHECKED) + t["text"] for t in todos]
            ctx.ui.set_widget("plan-todos", lines)
        else:
            ctx.ui.set_widget("plan-todos", None)

    def enable_plan_tools() -> None:
        if s["before"] is None:
            s["before"] = pi.get_active_tools()
        pi.set_active_tools(_unique([*(n for n in s["before"] if n not in PLAN_MODE_DISABLED_TOOLS), *PLAN_MODE_TOOLS]))

    def restore_normal_tools() -> None:
        before = s["before"]
        if before is None:
            before = _unique([*NORMAL_MODE_TOOLS, *(n for n in pi.get_active_tools() if n not in PLAN_MANAGED_TOOLS)])
        pi.set_active_tools(before)
        s["before"] = None

    def persist() -> None:
        data: dict[str, Any] = {"enabled": s["plan"], "todos": s["todos"], "executing": s["executing"]}
        if s["before"] is not None:
            data["toolsBeforePlanMode"] = s["before"]
        pi.append_entry("plan-mode", data)

    def toggle(ctx: Any) -> None:
        s["plan"] = not s["plan"]
        s["executing"] = False
        s["todos"] = []
        if s["plan"]:
            enable_plan_tools()
            ctx.ui.notify("Plan mode enabled. Built-in write tools disabled.")
        else:
            restore_normal_tools()
            ctx.ui.notify("Plan mode disabled. Full access restored.")
        update_status(ctx)
        persist()

    async def plan_command(args: str, ctx: Any) -> None:
        toggle(ctx)

    async def todos_command(args: str, ctx: Any) -> None:
        if not s["todos"]:
            ctx.ui.notify("No todos. Create a plan first with /plan", "info")
            return
        listing = "\n".join(f"{i + 1}. {DONE if t['completed'] else OPEN} {t['text']}"
                            for i, t in enumerate(s["todos"]))
        ctx.ui.notify(f"Plan Progress:\n{listing}", "info")

    pi.register_command("plan", "Toggle plan mode (read-only exploration)", plan_command)
    pi.register_command("todos", "Show current plan todo list", todos_command)
    pi.register_shortcut("ctrl+alt+p", lambda ctx: toggle(ctx), description="Toggle plan mode")

    async def on_tool_call(event: dict[str, Any], ctx: Any) -> dict[str, Any] | None:
        if not s["plan"] or event["toolName"] != "bash":
            return None
        command = event["input"]["command"]
        if not is_safe_command(command):
            return {"block": True, "reason": "Plan mode: command blocked (not allowlisted). Use /plan to disable plan "
                                             f"mode first.\nCommand: {command}"}
        return None

    def keep(message: dict[str, Any]) -> bool:
        if message.get("customType") == "plan-mode-context":
            return False
        if message.get("role") != "user":
            return True
        content = message.get("content")
        if isinstance(content, str):
            return "[PLAN MODE ACTIVE]" not in content
        if isinstance(content, list):
            return not any(c.get("type") == "text" and "[PLAN MODE ACTIVE]" in (c.get("text") or "") for c in content)
        return True

    async def on_context(event: dict[str, Any], ctx: Any) -> dict[str, Any] | None:
        if s["plan"]:
            return None
        return {"messages": [m for m in event["messages"] if keep(m)]}

    async def on_before_agent_start(event: dict[str, Any], ctx: Any) -> dict[str, Any] | None:
        if s["plan"]:
            return {"message": {"customType": "plan-mode-context", "content": PLAN_CONTEXT, "display": False}}
        if s["executing"] and s["todos"]:
            remaining = "\n".join(f"{t['step']}. {t['text']}" for t in s["todos"] if not t["completed"])
            return {"message": {"customType": "plan-execution-context", "display": False, "content":
                                "[EXECUTING PLAN - Full tool access enabled]\n\nRemaining steps:\n"
                                f"{remaining}\n\nExecute each step in order.\n"
                                "After completing a step, include a [DONE:n] tag in your response."}}
        return None

    async def on_turn_end(event: dict[str, Any], ctx: Any) -> None:
        if not s["executing"] or not s["todos"] or not _is_assistant(event["message"]):
            return
        if mark_completed_steps(_text(event["message"]), s["todos"]) > 0:
            update_status(ctx)
        persist()

    async def on_agent_end(event: dict[str, Any], ctx: Any) -> None:
        todos = s["todos"]
        if s["executing"] and todos:
            if all(t["completed"] for t in todos):
                done = "\n".join(f"~~{t['text']}~~" for t in todos)
                pi.send_message({"customType": "plan-complete", "content": f"**Plan Complete!** \u2713\n\n{done}",
                                 "display": True}, trigger_turn=False)
                s["executing"] = False
                s["todos"] = []
                update_status(ctx)
                persist()
            return
        if not s["plan"] or not ctx.has_ui:
            return
        last = next((m for m in reversed(event["messages"]) if _is_assistant(m)), None)
        if last is not None:
            extracted = extract_todo_items(_text(last))
            if extracted:
                s["todos"] = extracted
        todos = s["todos"]
        if not todos:
            return
        persist()
        listing = "\n".join(f"{i + 1}. \u2610 {t['text']}" for i, t in enumerate(todos))
        todo_message = {"customType": "plan-todo-list", "content": f"**Plan Steps ({len(todos)}):**\n\n{listing}",
                        "display": True}
        choice = await ctx.ui.select("Plan mode - what next?", ["Execute the plan (track progress)",
                                                                "Stay in plan mode", "Refine the plan"])
        if choice is not None and choice.startswith("Execute"):
            first = todos[0]
            s["plan"] = False
            s["executing"] = True
            restore_normal_tools()
            update_status(ctx)
            persist()
            remaining = "\n".join(f"{t['step']}. {t['text']}" for t in todos)
            execute = (f"Execute the plan.\n\nRemaining steps:\n{remaining}\n\nStart with: {first['text']}\n"
                       "After completing a step, include a [DONE:n] tag in your response.")
            pi.send_message(todo_message, deliver_as="followUp")
            pi.send_message({"customType": "plan-mode-execute", "content": execute, "display": True},
                            trigger_turn=True, deliver_as="followUp")
        elif choice == "Refine the plan":
            refinement = await ctx.ui.editor("Refine the plan:", "")
            if refinement is not None and refinement.strip():
                pi.send_message(todo_message, deliver_as="followUp")
                pi.send_user_message(refinement.strip(), deliver_as="followUp")

    async def on_session_start(event: dict[str, Any], ctx: Any) -> None:
        if pi.get_flag("plan") is True:
            s["plan"] = True
        entries = ctx.session_manager.get_entries()
        saved = next((e for e in reversed(entries) if e["type"] == "custom" and e.get("customType") == "plan-mode"),
                     None)
        data = saved.get("data") if saved is not None else None
        if data:
            s["plan"] = data.get("enabled", s["plan"])
            s["todos"] = data.get("todos", s["todos"])
            s["executing"] = data.get("executing", s["executing"])
            s["before"] = data.get("toolsBeforePlanMode", s["before"])
        if saved is not None and s["executing"] and s["todos"]:
            start = next((i for i in range(len(entries) - 1, -1, -1)
                          if entries[i].get("customType") == "plan-mode-execute"), -1)
            texts = [_text(e["message"]) for e in entries[start + 1:]
                     if e["type"] == "message" and _is_assistant(e.get("message"))]
            mark_completed_steps("\n".join(texts), s["todos"])
        if s["plan"]:
            enable_plan_tools()
        update_status(ctx)

    pi.on("tool_call", on_tool_call)
    pi.on("context", on_context)
    pi.on("before_agent_start", on_before_agent_start)
    pi.on("turn_end", on_turn_end)
    pi.on("agent_end", on_agent_end)
    pi.on("session_start", on_session_start)
