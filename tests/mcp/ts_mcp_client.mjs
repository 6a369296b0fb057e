// An editor on the official TypeScript ACP SDK (npm @agentclientprotocol/sdk 2.4) passing an MCP server
// to `rpcd acp` as Zed passes its context servers: the SDK checks every answer, update and request of
// rpcd's with its own schemas (elicitation/create, usage, plan-free session updates). One JSON report line.
//
// argv: <sdk dir> <agent dir> <project> <extra dir> <python> <fault server path>
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [sdkDir, agentDir, project, extraDir, python, faultServer] = process.argv.slice(2);
const acp = await import(pathToFileURL(join(sdkDir, "node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js")));
const { client, methods, ndJsonStream } = acp;

const child = spawn(python, ["-P", "-m", "rpcd", "acp", "--agent-dir", agentDir], {
  stdio: ["pipe", "pipe", "inherit"], env: process.env,
});
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const updates = [];
const permissions = [];
const elicitations = [];

const app = client({ name: "rpcd-ts-mcp-test" })
  .onNotification(methods.client.session.update, ({ params }) => { updates.push(params.update); })
  .onRequest(methods.client.session.requestPermission, async ({ params }) => {
    permissions.push(params.toolCall.title);
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  })
  .onRequest(methods.client.elicitation.create, async ({ params }) => {
    elicitations.push(params);
    return { action: "accept", content: { name: "Ada", age: 36, happy: true } };
  });

const texts = () => updates.filter((u) => u.sessionUpdate === "tool_call_update" && u.content?.length
  && (u.status === "completed" || u.status === "failed")).map((u) => u.content[0].content.text);

const report = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false,
                          elicitation: { form: {} } },
    clientInfo: { name: "rpcd-ts-mcp-test", version: "1.0.0" },
  });
  assert.deepEqual(init.agentCapabilities.mcpCapabilities, { http: true, sse: true });
  assert.deepEqual(init.agentCapabilities.sessionCapabilities.additionalDirectories, {});
  const session = await ctx.request(methods.agent.session.new, {
    cwd: project, additionalDirectories: [extraDir],
    mcpServers: [{ name: "faults", command: python, args: ["-I", faultServer], env: [] }],
  });
  const first = await ctx.request(methods.agent.session.prompt, {
    sessionId: session.sessionId, prompt: [{ type: "text", text: "use the server" }] });
  const commands = updates.filter((u) => u.sessionUpdate === "available_commands_update")
    .flatMap((u) => u.availableCommands.map((c) => c.name));
  return {
    stopReason: first.stopReason,
    usage: first.usage ?? null,
    texts: texts(),
    permissions,
    elicitationMessages: elicitations.map((e) => e.message),
    elicitationFields: elicitations.map((e) => Object.keys(e.requestedSchema.properties).sort()),
    commands,
  };
});

child.stdin.end();
const code = await new Promise((resolve) => child.on("exit", resolve));
console.log(JSON.stringify({ ...report, exitCode: code }));
