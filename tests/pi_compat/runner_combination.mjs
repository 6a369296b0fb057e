// Pi 0.85.0's own ExtensionRunner (dist/core/extensions/runner.js) combining scripted handlers, for
// tests/pi_compat/test_runner_against_pi.py: one JSON scenario per stdin line, one JSON answer per
// stdout line.
//
// Scenario: {"event", "args", "extensions": [{"path", "handlers": [handler...]}]}; a handler is
// {"result"?: any, "throw"?: string, "set"?: {name: value|null} (mutates event.headers / event.input)}.
// Answer: {"result", "seen": [[ext, handler, event, systemPrompt?]], "errors": [[path, event, error]]}.

import { createInterface } from "node:readline";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dist = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works", "pi-coding-agent", "dist");
const { ExtensionRunner } = await import(pathToFileURL(join(dist, "core", "extensions", "runner.js")).href);
const { createExtensionRuntime } = await import(pathToFileURL(join(dist, "core", "extensions", "loader.js")).href);

function copy(value) {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}

async function run(scenario) {
  const seen = [];
  const errors = [];
  const extensions = scenario.extensions.map((spec, e) => {
    const handlers = spec.handlers.map((h, i) => async (event, ctx) => {
      const { signal: _signal, ...plain } = event;
      const record = [e, i, copy(plain)];
      if (scenario.event === "before_agent_start") record.push(ctx.getSystemPrompt());
      seen.push(record);
      const target = event.headers ?? event.input;
      for (const [key, value] of Object.entries(h.set ?? {})) target[key] = value;
      if (h.throw !== undefined) throw new Error(h.throw);
      return h.result === null ? undefined : h.result;
    });
    return { path: spec.path, handlers: new Map([[scenario.event, handlers]]), tools: new Map(),
             commands: new Map(), flags: new Map(), shortcuts: new Map(), messageRenderers: new Map() };
  });
  const runner = new ExtensionRunner(extensions, createExtensionRuntime(), "/project", {}, {});
  runner.onError((err) => errors.push([err.extensionPath, err.event, err.error]));
  const a = scenario.args;
  let result;
  try {
    switch (scenario.event) {
      case "input":
        result = await runner.emitInput(a.text, a.images ?? undefined, a.source, a.streamingBehavior ?? undefined);
        break;
      case "before_agent_start":
        result = await runner.emitBeforeAgentStart(a.prompt, a.images ?? undefined, a.systemPrompt, a.options);
        break;
      case "context":
        result = await runner.emitContext(a.messages);
        break;
      case "before_provider_request":
        result = await runner.emitBeforeProviderRequest(a.payload);
        break;
      case "before_provider_headers":
        result = await runner.emitBeforeProviderHeaders(a.headers);
        break;
      case "tool_call": {
        const event = { type: "tool_call", toolName: a.toolName, toolCallId: a.toolCallId, input: a.input };
        result = { result: (await runner.emitToolCall(event)) ?? null, input: event.input };
        break;
      }
      case "tool_result":
        result = await runner.emitToolResult({ type: "tool_result", ...a });
        break;
      case "message_end":
        result = await runner.emitMessageEnd({ type: "message_end", message: a.message });
        break;
      case "user_bash":
        result = await runner.emitUserBash({ type: "user_bash", ...a });
        break;
      case "resources_discover":
        result = await runner.emitResourcesDiscover(a.cwd, a.reason);
        break;
      default:
        result = await runner.emit({ type: scenario.event, ...a });
    }
  } catch (err) {
    result = { thrown: err instanceof Error ? err.message : String(err) };
  }
  return { result: copy(result), seen, errors };
}

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  process.stdout.write(JSON.stringify(await run(JSON.parse(line))) + "\n");
}
