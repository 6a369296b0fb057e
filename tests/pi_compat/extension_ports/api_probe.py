"""The Python twin of ``api_probe.ts`` (rpcd's own test probe, not one of Pi's examples)."""

from __future__ import annotations

from typing import Any

TEXT_PARAMS = {"type": "object", "properties": {"value": {"type": "string"}}, "required": ["value"]}


def register(pi: Any) -> None:
    def record(what: str, **data: Any) -> None:
        pi.append_entry("probe", {"kind": what, **data})

    async def probe_tool(tool_call_id: str, params: dict[str, Any], signal: Any, on_update: Any, ctx: Any) -> Any:
        on_update({"content": [{"type": "text", "text": "working"}], "details": {"step": 1}})
        return {"content": [{"type": "text", "text": f"echo {params['value']}"}],
                "details": {"aborted": signal.aborted if signal is not None else None}}

    def prepare(args: Any) -> Any:
        return {"value": args["text"]} if isinstance(args, dict) and isinstance(args.get("text"), str) else args

    pi.register_tool({"name": "probe_tool", "label": "Probe tool",
                      "description": "Echo a value (takes the older `text` argument too)",
                      "promptSnippet": "Echo a value", "parameters": TEXT_PARAMS, "prepareArguments": prepare,
                      "execute": probe_tool})

    async def probe_exec(args: str, ctx: Any) -> None:
        done = await pi.exec("sh", ["-c", "printf out; printf err >&2; exit 3"])
        record("exec", stdout=done["stdout"], stderr=done["stderr"], code=done["code"], killed=done["killed"])
        slow = await pi.exec("sleep", ["5"], timeout=100)
        record("exec-timeout", stdout=slow["stdout"], code=slow["code"], killed=slow["killed"])
        missing = await pi.exec("no-such-program-here", [])
        record("exec-missing", code=missing["code"], killed=missing["killed"])

    def probe_tools(args: str, ctx: Any) -> None:
        record("tools", all=[[t["name"], t["sourceInfo"]["source"]] for t in pi.get_all_tools()],
               active=pi.get_active_tools())
        pi.set_active_tools(["read", "nope", "probe_tool"])
        record("tools-after", active=pi.get_active_tools())

    def probe_label(args: str, ctx: Any) -> None:
        leaf = ctx.session_manager.get_leaf_id()
        pi.set_label(leaf, "marked")
        record("label", label=ctx.session_manager.get_label(leaf))
        pi.set_label(leaf, None)
        record("label-cleared", label=ctx.session_manager.get_label(leaf))

    def probe_commands(args: str, ctx: Any) -> None:
        record("commands", commands=[[c["name"], c["source"]] for c in pi.get_commands()])

    def probe_next(args: str, ctx: Any) -> None:
        pi.send_message({"customType": "note", "content": "for the next turn", "display": True}, deliver_as="nextTurn")

    def probe_trigger(args: str, ctx: Any) -> None:
        pi.send_message({"customType": "note", "content": "triggered", "display": False}, trigger_turn=True)

    def probe_ctx(args: str, ctx: Any) -> None:
        usage = ctx.get_context_usage()
        options = ctx.get_system_prompt_options()
        model = ctx.model
        found = ctx.model_registry.find(model["provider"], model["id"]) if model else None
        record("ctx", mode=ctx.mode, hasUI=ctx.has_ui, model=f"{model['provider']}/{model['id']}" if model else None,
               thinking=ctx.thinking_level, idle=ctx.is_idle(), trusted=ctx.is_project_trusted(),
               pending=ctx.has_pending_messages(), signal=None if ctx.signal is None else ctx.signal.aborted,
               usage={"window": usage["contextWindow"], "tokens": "number" if isinstance(usage["tokens"], int | float)
                      else "object"} if usage else None,
               options=sorted(k for k, v in options.items() if v is not None),
               selectedTools=options.get("selectedTools"),
               promptHasTools="probe_tool" in ctx.get_system_prompt(),
               entries=[f"custom:{e.get('customType')}" if e["type"] == "custom" else e["type"]
                        for e in ctx.session_manager.get_entries()],
               branch=len(ctx.session_manager.get_branch()),
               registry=found["id"] if found else None)

    async def probe_confirm(args: str, ctx: Any) -> None:
        record("confirm", answer=await ctx.ui.confirm("Sure?", "Really?"))

    async def probe_tree(args: str, ctx: Any) -> None:
        first = next(e for e in ctx.session_manager.get_entries()
                     if e["type"] == "message" and e["message"]["role"] == "user")
        result = await ctx.navigate_tree(first["id"], summarize=False)
        record("tree", cancelled=result["cancelled"],
               leafIsParent=ctx.session_manager.get_leaf_id() == first["parentId"])

    async def probe_new(args: str, ctx: Any) -> None:
        def setup(sm: Any) -> None:
            sm.append_custom_message_entry("seed", "seeded before the start", True)

        async def in_new(new_ctx: Any) -> None:
            await new_ctx.send_user_message("hello from the new session")

        await ctx.new_session(setup=setup, with_session=in_new)

    commands: list[tuple[str, Any, str]] = [
        ("probe-exec", probe_exec, "pi.exec"),
        ("probe-tools", probe_tools, "tools"),
        ("probe-label", probe_label, "labels"),
        ("probe-commands", probe_commands, "commands"),
        ("probe-next", probe_next, "a message for the next turn"),
        ("probe-trigger", probe_trigger, "a message that starts a turn"),
        ("probe-ctx", probe_ctx, "context members"),
        ("probe-confirm", probe_confirm, "a dialog"),
        ("probe-tree", probe_tree, "navigate to the first user message"),
        ("probe-new", probe_new, "a new session with a setup and a message"),
    ]
    for name, handler, description in commands:
        options: dict[str, Any] = {"description": description, "handler": handler}
        if name == "probe-commands":
            options["getArgumentCompletions"] = lambda prefix: [{"value": f"{prefix}x", "label": "x"}]
        pi.register_command(name, options)

    def on_message_end(event: dict[str, Any], ctx: Any) -> Any:
        message = event["message"]
        if message["role"] != "assistant":
            return None
        text = next((b["text"] for b in message["content"] if b["type"] == "text"), "")
        if "REPLACE" not in text:
            return None
        return {"message": {**message, "content": [{"type": "text", "text": text.replace("REPLACE", "replaced", 1)}]}}

    def on_user_bash(event: dict[str, Any], ctx: Any) -> Any:
        if event["command"].startswith("fake "):
            return {"result": {"output": f"faked {event['command'][5:]}", "exitCode": 0, "cancelled": False,
                               "truncated": False}}
        return None

    pi.on("message_end", on_message_end)
    pi.on("user_bash", on_user_bash)
    pi.on("ui_prompt_start", lambda e, ctx: record("ui_prompt_start", kind=e["kind"], title=e.get("title")))
    pi.on("ui_prompt_end", lambda e, ctx: record("ui_prompt_end", kind=e["kind"]))
    pi.on("thinking_level_select", lambda e, ctx: record("thinking", level=e["level"], previous=e["previousLevel"]))
    pi.on("tool_execution_update", lambda e, ctx: record("update", text=e["partialResult"]["content"][0]["text"]))
