"""A Python port of Pi's ``examples/extensions/kimi-deferred-tools.ts``: only ``tool_search`` is active at
first; searching for a calculator activates ``Calculator`` (its ``toolResult`` records it in
``addedToolNames``, which Kimi models load as deferred tools)."""

from __future__ import annotations

from typing import Any


def calculate(_expr: str) -> str:
    return "42"


def register(pi: Any) -> None:
    async def calculator(tool_call_id: str, params: dict[str, Any], signal: Any, on_update: Any, ctx: Any) -> Any:
        return {"content": [{"type": "text", "text": calculate(params["expr"])}], "details": {}}

    pi.register_tool({
        "name": "Calculator",
        "label": "Calculator",
        "description": "Evaluate a simple arithmetic expression.",
        "parameters": {"type": "object", "required": ["expr"], "properties": {
            "expr": {"type": "string", "description": "An expression such as 100 + 500"}}},
        "execute": calculator,
    })

    async def tool_search(tool_call_id: str, params: dict[str, Any], signal: Any, on_update: Any, ctx: Any) -> Any:
        if "calc" not in params["query"].lower():
            return {"content": [{"type": "text", "text": "The relevant tools do not exist."}],
                    "details": {"matches": [], "added": []}}
        active = pi.get_active_tools()
        added = [] if "Calculator" in active else ["Calculator"]
        if added:
            pi.set_active_tools([*active, *added])
        return {"content": [{"type": "text", "text": "Success. Found 1 matching tool(s)"}],
                "details": {"matches": ["Calculator"], "added": added}}

    pi.register_tool({
        "name": "tool_search",
        "label": "Tool Search",
        "description": "Find and activate tools for a capability.",
        "promptSnippet": "Search for additional tools when the active tools cannot perform the task",
        "parameters": {"type": "object", "required": ["query"], "properties": {
            "query": {"type": "string", "description": "Capability to search for"}}},
        "execute": tool_search,
    })

    pi.on("session_start", lambda event, ctx: pi.set_active_tools(["tool_search"]))
