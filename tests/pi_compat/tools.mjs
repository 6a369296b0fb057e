// Pi 0.85.0's own built-in tools, for the differential test (tests/pi_compat/test_tools_against_pi.py).
//
// Input on stdin: one JSON document {"cases": [...]}; each case
//   {"id", "tool", "cwd", "args", "abortAfterMs"?, "snapshot"?: [relative paths]}
// runs as the agent loop runs a call: the tool's prepareArguments, pi-ai's validateToolArguments,
// then createXTool(cwd).execute(...) with an AbortSignal and an update callback. Output: one JSON
// line per case {"id", "result"? | "error"?, "updates", "files"} (JSON.stringify drops undefined
// fields exactly as Pi does when it persists or sends a result). Cases run one at a time.
// Special requests: {"definitions": true} → the tool definitions; {"systemPrompt": options} →
// buildSystemPrompt(options).
//
// Environment: RPCD_PI_ORACLE_DIR; the caller sets PATH (rg, fd), HOME, PI_CODING_AGENT_DIR.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const out = process.stdout.write.bind(process.stdout);
console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);

const oracleDir = process.env.RPCD_PI_ORACLE_DIR;
const scope = join(oracleDir, "node_modules", "@earendil-works");
const load = (pkg, file) => import(pathToFileURL(join(scope, pkg, file)).href);
const pi = await load("pi-coding-agent", "dist/index.js");
const { validateToolArguments } = await load("pi-ai", "dist/index.js");
const { buildSystemPrompt } = await load("pi-coding-agent", "dist/core/system-prompt.js");
const defs = await load("pi-coding-agent", "dist/core/tools/index.js");

const creators = {
  read: pi.createReadTool, bash: pi.createBashTool, edit: pi.createEditTool, write: pi.createWriteTool,
  grep: pi.createGrepTool, find: pi.createFindTool, ls: pi.createLsTool,
};
const plain = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

async function runCase(c) {
  const tool = creators[c.tool](c.cwd);
  const updates = [];
  const record = { id: c.id, updates };
  const controller = new AbortController();
  let timer;
  if (c.abortAfterMs !== undefined) timer = setTimeout(() => controller.abort(), c.abortAfterMs);
  try {
    let call = { id: "call-1", name: c.tool, arguments: structuredClone(c.args) };
    if (tool.prepareArguments) call = { ...call, arguments: tool.prepareArguments(call.arguments) };
    const args = validateToolArguments(tool, call);
    const result = await tool.execute("call-1", args, controller.signal, (u) => updates.push(plain(u)));
    record.result = plain(result);
  } catch (error) {
    record.error = error instanceof Error ? error.message : String(error);
  } finally {
    if (timer) clearTimeout(timer);
  }
  record.files = {};
  for (const rel of c.snapshot ?? []) {
    try {
      record.files[rel] = readFileSync(join(c.cwd, rel)).toString("base64");
    } catch {
      record.files[rel] = null;
    }
  }
  return record;
}

const input = JSON.parse(readFileSync(0, "utf8"));
if (input.definitions) {
  const all = defs.createAllToolDefinitions("/");
  const picked = {};
  for (const name of ["read", "bash", "edit", "write", "grep", "find", "ls"]) {
    const d = all[name];
    picked[name] = { name: d.name, label: d.label, description: d.description, parameters: plain(d.parameters),
      promptSnippet: d.promptSnippet, promptGuidelines: d.promptGuidelines };
  }
  out(JSON.stringify({ definitions: picked }) + "\n");
}
for (const options of input.systemPrompts ?? []) {
  out(JSON.stringify({ systemPrompt: buildSystemPrompt(options) }) + "\n");
}
for (const c of input.cases ?? []) {
  out(JSON.stringify(await runCase(c)) + "\n");
}
