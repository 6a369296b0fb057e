// rpcd's own test probe (not one of Pi's examples): the ExtensionAPI and context members no example of
// Pi's exercises through its RPC mode, each under a command that records what it saw as a `probe`
// entry (the session files are compared) or a notification (the UI requests are compared).
const textParams = { type: "object", properties: { value: { type: "string" } }, required: ["value"] };

export default function (pi) {
  const record = (kind, data) => pi.appendEntry("probe", { kind, ...data });

  pi.registerTool({
    name: "probe_tool",
    label: "Probe tool",
    description: "Echo a value (takes the older `text` argument too)",
    promptSnippet: "Echo a value",
    parameters: textParams,
    prepareArguments: (args) => (args && typeof args.text === "string" ? { value: args.text } : args),
    async execute(_toolCallId, params, signal, onUpdate) {
      onUpdate?.({ content: [{ type: "text", text: "working" }], details: { step: 1 } });
      return { content: [{ type: "text", text: `echo ${params.value}` }], details: { aborted: signal?.aborted ?? null } };
    },
  });

  pi.registerCommand("probe-exec", {
    description: "pi.exec",
    handler: async () => {
      const done = await pi.exec("sh", ["-c", "printf out; printf err >&2; exit 3"]);
      record("exec", { stdout: done.stdout, stderr: done.stderr, code: done.code, killed: done.killed });
      const slow = await pi.exec("sleep", ["5"], { timeout: 100 });
      record("exec-timeout", { stdout: slow.stdout, code: slow.code, killed: slow.killed });
      const missing = await pi.exec("no-such-program-here", []);
      record("exec-missing", { code: missing.code, killed: missing.killed });
    },
  });

  pi.registerCommand("probe-tools", {
    description: "tools",
    handler: async () => {
      record("tools", { all: pi.getAllTools().map((t) => [t.name, t.sourceInfo.source]), active: pi.getActiveTools() });
      pi.setActiveTools(["read", "nope", "probe_tool"]);
      record("tools-after", { active: pi.getActiveTools() });
    },
  });

  pi.registerCommand("probe-label", {
    description: "labels",
    handler: async (_args, ctx) => {
      const leaf = ctx.sessionManager.getLeafId();
      pi.setLabel(leaf, "marked");
      record("label", { label: ctx.sessionManager.getLabel(leaf) ?? null });
      pi.setLabel(leaf, undefined);
      record("label-cleared", { label: ctx.sessionManager.getLabel(leaf) ?? null });
    },
  });

  pi.registerCommand("probe-commands", {
    description: "commands",
    getArgumentCompletions: (prefix) => [{ value: `${prefix}x`, label: "x" }],
    handler: async () => record("commands", { commands: pi.getCommands().map((c) => [c.name, c.source]) }),
  });

  pi.registerCommand("probe-next", {
    description: "a message for the next turn",
    handler: async () => pi.sendMessage({ customType: "note", content: "for the next turn", display: true },
                                        { deliverAs: "nextTurn" }),
  });

  pi.registerCommand("probe-trigger", {
    description: "a message that starts a turn",
    handler: async () => pi.sendMessage({ customType: "note", content: "triggered", display: false },
                                        { triggerTurn: true }),
  });

  pi.registerCommand("probe-ctx", {
    description: "context members",
    handler: async (_args, ctx) => {
      const usage = ctx.getContextUsage();
      const options = ctx.getSystemPromptOptions();
      record("ctx", {
        mode: ctx.mode, hasUI: ctx.hasUI, model: ctx.model ? `${ctx.model.provider}/${ctx.model.id}` : null,
        thinking: ctx.thinkingLevel ?? null, idle: ctx.isIdle(), trusted: ctx.isProjectTrusted(),
        pending: ctx.hasPendingMessages(), signal: ctx.signal === undefined ? null : ctx.signal.aborted,
        usage: usage ? { window: usage.contextWindow, tokens: typeof usage.tokens } : null,
        options: Object.keys(options).filter((k) => options[k] !== undefined).sort(),
        selectedTools: options.selectedTools ?? null,
        promptHasTools: ctx.getSystemPrompt().includes("probe_tool"),
        entries: ctx.sessionManager.getEntries().map((e) => (e.type === "custom" ? `custom:${e.customType}` : e.type)),
        branch: ctx.sessionManager.getBranch().length,
        registry: ctx.modelRegistry.find(ctx.model?.provider ?? "", ctx.model?.id ?? "")?.id ?? null,
      });
    },
  });

  pi.registerCommand("probe-confirm", {
    description: "a dialog",
    handler: async (_args, ctx) => record("confirm", { answer: await ctx.ui.confirm("Sure?", "Really?") }),
  });

  pi.registerCommand("probe-tree", {
    description: "navigate to the first user message",
    handler: async (_args, ctx) => {
      const first = ctx.sessionManager.getEntries().find((e) => e.type === "message" && e.message.role === "user");
      const result = await ctx.navigateTree(first.id, { summarize: false });
      record("tree", { cancelled: result.cancelled, leafIsParent: ctx.sessionManager.getLeafId() === first.parentId });
    },
  });

  pi.registerCommand("probe-new", {
    description: "a new session with a setup and a message",
    handler: async (_args, ctx) => {
      await ctx.newSession({
        setup: async (sm) => {
          sm.appendCustomMessageEntry("seed", "seeded before the start", true);
        },
        withSession: async (next) => {
          await next.sendUserMessage("hello from the new session");
        },
      });
    },
  });

  pi.on("message_end", (event) => {
    const message = event.message;
    if (message.role !== "assistant") return;
    const text = message.content.find((b) => b.type === "text")?.text ?? "";
    if (!text.includes("REPLACE")) return;
    return { message: { ...message, content: [{ type: "text", text: text.replace("REPLACE", "replaced") }] } };
  });

  pi.on("user_bash", (event) => {
    if (event.command.startsWith("fake ")) {
      return { result: { output: `faked ${event.command.slice(5)}`, exitCode: 0, cancelled: false, truncated: false } };
    }
  });

  pi.on("ui_prompt_start", (event) => record("ui_prompt_start", { kind: event.kind, title: event.title ?? null }));
  pi.on("ui_prompt_end", (event) => record("ui_prompt_end", { kind: event.kind }));
  pi.on("thinking_level_select", (event) => record("thinking", { level: event.level, previous: event.previousLevel }));
  pi.on("tool_execution_update", (event) => record("update", { text: event.partialResult.content[0].text }));
}
