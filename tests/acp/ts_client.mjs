// An editor built on the official TypeScript ACP SDK (npm @agentclientprotocol/sdk 2.4, stable v1 entry:
// client() + ndJsonStream) driving a real `rpcd acp` child process. It checks what it sees with
// node:assert and prints one JSON report line for the Python side (tests/acp/test_typescript_sdk.py).
//
// argv: <sdk dir> <agent dir> <project a> <project b> <python> ; env RPCD_ACP_ARGS: extra rpcd args (JSON)
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [sdkDir, agentDir, projectA, projectB, python] = process.argv.slice(2);
const acp = await import(pathToFileURL(join(sdkDir, "node_modules/@agentclientprotocol/sdk/dist/v1/stable/acp.js")));
const { client, methods, ndJsonStream } = acp;

const child = spawn(python, ["-P", "-m", "rpcd", "acp", "--agent-dir", agentDir], {
  stdio: ["pipe", "pipe", "inherit"],
  env: process.env,
});
const stream = ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const updates = []; // [sessionId, update] in arrival order
const permissions = [];
const permissionAnswers = ["allow_once", "reject_once"];
const buffers = new Map(); // unsaved editor text by path
const reads = [];
const writes = [];

const app = client({ name: "rpcd-ts-test" })
  .onNotification(methods.client.session.update, ({ params }) => {
    updates.push([params.sessionId, params.update]);
  })
  .onRequest(methods.client.session.requestPermission, async ({ params }) => {
    permissions.push(params);
    const optionId = permissionAnswers.shift() ?? "allow_once";
    return { outcome: { outcome: "selected", optionId } };
  })
  .onRequest(methods.client.fs.readTextFile, async ({ params }) => {
    reads.push(params.path);
    if (buffers.has(params.path)) return { content: buffers.get(params.path) };
    const { readFile } = await import("node:fs/promises");
    return { content: await readFile(params.path, "utf8") };
  })
  .onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
    writes.push([params.path, params.content]);
    buffers.set(params.path, params.content);
    return {};
  });

const of = (sid, kind) => updates.filter(([s, u]) => s === sid && (!kind || u.sessionUpdate === kind)).map(([, u]) => u);
const text = (sid) => of(sid, "agent_message_chunk").map((u) => u.content.text).join("");

const report = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: true, writeTextFile: true }, terminal: false },
    clientInfo: { name: "rpcd-ts-test", version: "1.0.0" },
  });
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  assert.deepEqual(init.agentCapabilities.sessionCapabilities.delete, {});

  // two sessions on one connection, prompting at once; nothing of one reaches the other
  const a = await ctx.request(methods.agent.session.new, { cwd: projectA, mcpServers: [] });
  const b = await ctx.request(methods.agent.session.new, { cwd: projectB, mcpServers: [] });
  const [ra, rb] = await Promise.all([
    ctx.request(methods.agent.session.prompt, { sessionId: a.sessionId, prompt: [{ type: "text", text: "hi a" }] }),
    ctx.request(methods.agent.session.prompt, { sessionId: b.sessionId, prompt: [{ type: "text", text: "hi b" }] }),
  ]);
  assert.equal(ra.stopReason, "end_turn");
  assert.equal(rb.stopReason, "end_turn");
  assert.equal(text(a.sessionId), "alpha ".repeat(30));
  assert.equal(text(b.sessionId), "beta ".repeat(30));

  // permission: allow once (the write lands in the editor), then reject once (nothing written)
  const notes = join(projectA, "notes.txt");
  buffers.set(notes, "unsaved buffer text\n");
  const r1 = await ctx.request(methods.agent.session.prompt, {
    sessionId: a.sessionId, prompt: [{ type: "text", text: "edit the notes" }] });
  assert.equal(r1.stopReason, "end_turn");
  assert.equal(buffers.get(notes), "edited buffer text\n");
  const r2 = await ctx.request(methods.agent.session.prompt, {
    sessionId: a.sessionId, prompt: [{ type: "text", text: "edit again" }] });
  assert.equal(r2.stopReason, "end_turn");
  assert.equal(buffers.get(notes), "edited buffer text\n");
  assert.equal(permissions.length, 2);
  const failed = of(a.sessionId, "tool_call_update").filter((u) => u.status === "failed");
  assert.equal(failed.length, 1);

  // cancel a long turn
  const longBefore = text(b.sessionId).length;
  const long = ctx.request(methods.agent.session.prompt, {
    sessionId: b.sessionId, prompt: [{ type: "text", text: "talk a lot" }] });
  // wait for streamed text, not for a number of chunks: a slow reader gets merged deltas (fewer chunks)
  while (text(b.sessionId).length - longBefore <= 90) await new Promise((r) => setTimeout(r, 10));
  await ctx.notify(methods.agent.session.cancel, { sessionId: b.sessionId });
  assert.equal((await long).stopReason, "cancelled");

  // fork (unstable: sent by name), list, load with replay, close, delete
  const forked = await ctx.request("session/fork", { sessionId: a.sessionId, cwd: projectA, mcpServers: [] });
  const listed = await ctx.request(methods.agent.session.list, {});
  const ids = listed.sessions.map((s) => s.sessionId);
  assert.ok(ids.includes(a.sessionId) && ids.includes(b.sessionId) && ids.includes(forked.sessionId));
  await ctx.request(methods.agent.session.close, { sessionId: a.sessionId });
  const before = updates.length;
  await ctx.request(methods.agent.session.load, { sessionId: a.sessionId, cwd: projectA, mcpServers: [] });
  const replayed = updates.slice(before).map(([, u]) => u);
  assert.deepEqual(replayed.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text),
    ["hi a", "edit the notes", "edit again"]);
  await ctx.request(methods.agent.session.delete, { sessionId: forked.sessionId });
  await ctx.request(methods.agent.session.delete, { sessionId: forked.sessionId }); // idempotent in this SDK
  const after = (await ctx.request(methods.agent.session.list, {})).sessions.map((s) => s.sessionId);
  assert.ok(!after.includes(forked.sessionId));
  let unknown = null;
  try {
    await ctx.request(methods.agent.session.prompt, { sessionId: "nope", prompt: [{ type: "text", text: "x" }] });
  } catch (error) {
    unknown = { code: error.code, data: error.data };
  }
  return {
    sessions: [a.sessionId, b.sessionId, forked.sessionId],
    kinds: [...new Set(updates.map(([, u]) => u.sessionUpdate))].sort(),
    reads,
    writes,
    permissionKinds: permissions.map((p) => p.toolCall.kind),
    replayedKinds: replayed.map((u) => u.sessionUpdate),
    unknown,
    authMethods: init.authMethods.map((m) => m.id),
  };
});

child.stdin.end();
const code = await new Promise((resolve) => child.on("exit", resolve));
console.log(JSON.stringify({ ...report, exitCode: code }));
