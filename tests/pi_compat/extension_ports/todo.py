"""Port of Pi's ``examples/extensions/todo.ts``: a ``todo`` tool whose state lives in its results'
``details`` and is rebuilt from the branch (``ctx.session_manager``) on ``session_start`` and
``session_tree``; ``/todos`` needs the terminal UI, as in Pi's RPC mode."""

from __future__ import annotations

import copy
from typing import Any

TODO_PARAMS = {"type": "object", "properties": {
    "action": {"type": "string", "enum": ["list", "add", "toggle", "clear"]},
    "text": {"type": "string", "description": "Todo text (for add)"},
    "id": {"type": "number", "description": "Todo ID (for toggle)"},
}, "required": ["action"]}


def _js_number(value: Any) -> str:
    """A number as JavaScript's template literal writes it (``3``, not ``3.0``)."""
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def register(pi: Any) -> None:
    state: dict[str, Any] = {"todos": [], "next_id": 1}

    def snapshot(action: str, **extra: Any) -> dict[str, Any]:
        return {"action": action, "todos": copy.deepcopy(state["todos"]), "nextId": state["next_id"], **extra}

    def reconstruct(event: dict[str, Any], ctx: Any) -> None:
        state["todos"], state["next_id"] = [], 1
        for entry in ctx.session_manager.get_branch():
            if entry["type"] != "message":
                continue
            message = entry["message"]
            if message["role"] != "toolResult" or message["toolName"] != "todo":
                continue
            details = message.get("details")
            if details:
                state["todos"], state["next_id"] = details["todos"], details["nextId"]

    async def execute(tool_call_id: str, params: dict[str, Any], ctx: Any) -> dict[str, Any]:
        todos: list[dict[str, Any]] = state["todos"]
        action = params["action"]
        if action == "list":
            text = "\n".join(f"[{'x' if t['done'] else ' '}] #{t['id']}: {t['text']}" for t in todos) or "No todos"
            return {"content": [{"type": "text", "text": text}], "details": snapshot("list")}
        if action == "add":
            if not params.get("text"):
                return {"content": [{"type": "text", "text": "Error: text required for add"}],
                        "details": snapshot("add", error="text required")}
            todo = {"id": state["next_id"], "text": params["text"], "done": False}
            state["next_id"] += 1
            todos.append(todo)
            return {"content": [{"type": "text", "text": f"Added todo #{todo['id']}: {todo['text']}"}],
                    "details": snapshot("add")}
        if action == "toggle":
            if params.get("id") is None:
                return {"content": [{"type": "text", "text": "Error: id required for toggle"}],
                        "details": snapshot("toggle", error="id required")}
            found = next((t for t in todos if t["id"] == params["id"]), None)
            if found is None:
                wanted = _js_number(params["id"])
                return {"content": [{"type": "text", "text": f"Todo #{wanted} not found"}],
                        "details": snapshot("toggle", error=f"#{wanted} not found")}
            found["done"] = not found["done"]
            word = "completed" if found["done"] else "uncompleted"
            return {"content": [{"type": "text", "text": f"Todo #{found['id']} {word}"}],
                    "details": snapshot("toggle")}
        if action == "clear":
            count = len(todos)
            state["todos"], state["next_id"] = [], 1
            return {"content": [{"type": "text", "text": f"Cleared {count} todos"}],
                    "details": {"action": "clear", "todos": [], "nextId": 1}}
        return {"content": [{"type": "text", "text": f"Unknown action: {action}"}],
                "details": snapshot("list", error=f"unknown action: {action}")}

    async def todos_command(args: str, ctx: Any) -> None:
        if ctx.mode != "tui":
            ctx.ui.notify("/todos requires interactive mode", "error")
            return

    pi.on("session_start", reconstruct)
    pi.on("session_tree", reconstruct)
    pi.register_tool("todo", "Manage a todo list. Actions: list, add (text), toggle (id), clear", TODO_PARAMS, execute,
                     label="Todo")
    pi.register_command("todos", "Show all todos on the current branch", todos_command)
