// Pi 0.85.0's own reading of session files, for the compatibility oracle (tests/pi_compat).
//
// One process inspects many files: importing Pi costs most of a second, opening a file
// a millisecond. Input: NDJSON on stdin, each line {"files": ["/abs/a.jsonl", ...]}. Output:
// one line per request, {"piVersion", "node", "results": [...]}, one result per file, in order.
// A file Pi refuses yields {"file", "error"} instead of a reading. Nothing else is printed
// to stdout; Pi's own chatter (if any) is routed to stderr.
//
// Environment: RPCD_PI_ORACLE_DIR = the directory holding node_modules/@earendil-works/*.
// The caller also sets PI_OFFLINE=1, PI_TELEMETRY=0 and a throwaway PI_CODING_AGENT_DIR.

import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const realStdoutWrite = process.stdout.write.bind(process.stdout);
// Keep stdout for our single JSON document; anything Pi logs goes to stderr.
console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);

const oracleDir = process.env.RPCD_PI_ORACLE_DIR;
if (!oracleDir) {
  console.error("RPCD_PI_ORACLE_DIR is not set");
  process.exit(2);
}
const pkgDir = join(oracleDir, "node_modules", "@earendil-works", "pi-coding-agent");
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
const rootEntry = pkg.exports?.["."]?.import ?? pkg.main;
// The public root, as a host would import it (this is what needs @earendil-works/pi-server).
const pi = await import(pathToFileURL(join(pkgDir, rootEntry)).href);
const { SessionManager } = pi;
// Not re-exported by the package root: Pi's /export of the current branch as JSONL.
const { exportSessionToJsonl } = await import(pathToFileURL(join(pkgDir, "dist", "core", "session-export.js")).href);

const sha256 = (bytes) => createHash("sha256").update(bytes).digest("hex");
const readOrNull = (file) => {
  try {
    return readFileSync(file);
  } catch {
    return null;
  }
};

function inspectFile(file) {
  const before = readOrNull(file);
  let manager;
  try {
    manager = SessionManager.open(file);
  } catch (error) {
    const after = readOrNull(file);
    return {
      file,
      error: String(error?.message ?? error),
      sha256Before: before && sha256(before),
      sha256After: after && sha256(after),
    };
  }
  const header = manager.getHeader();
  const entries = manager.getEntries();
  const typeCounts = {};
  const roleCounts = {};
  const labels = {};
  for (const entry of entries) {
    typeCounts[entry.type] = (typeCounts[entry.type] ?? 0) + 1;
    if (entry.type === "message") {
      const role = entry.message?.role;
      roleCounts[role] = (roleCounts[role] ?? 0) + 1;
    }
    const label = manager.getLabel(entry.id);
    if (label !== undefined) labels[entry.id] = label;
  }
  const roots = manager.getTree().map((node) => node.entry.id);
  const branchPoints = {};
  for (const entry of entries) {
    const children = manager.getChildren(entry.id);
    if (children.length > 1) branchPoints[entry.id] = children.map((child) => child.id);
  }
  const leafId = manager.getLeafId();
  const path = manager.getBranch();
  const context = manager.buildSessionContext();
  const after = readOrNull(file);
  return {
    file,
    header,
    sessionId: manager.getSessionId(),
    cwd: manager.getCwd(),
    entryIds: entries.map((entry) => entry.id),
    typeCounts,
    roleCounts,
    leafId,
    pathIds: path.map((entry) => entry.id),
    roots,
    branchPoints,
    labels,
    sessionName: manager.getSessionName() ?? null,
    context: {
      messageCount: context.messages.length,
      roles: context.messages.map((message) => message.role),
      thinkingLevel: context.thinkingLevel,
      model: context.model ?? null,
      messages: context.messages,
    },
    sha256Before: before && sha256(before),
    sha256After: after && sha256(after),
  };
}

// The same operation program our tests run through our store, run through Pi's SessionManager
// (tests/pi_compat/test_pi_and_we_write_alike.py). An entry is picked by index into getEntries()
// (file order) modulo their number, so both sides pick the same entry. JSON null stands for
// "argument not given" (undefined), as Python's None does on our side.
const opt = (value) => (value === null ? undefined : value);

function runProgram({ cwd, dir, ops }) {
  let manager = SessionManager.create(cwd, dir);
  const pick = (index) => {
    const entries = manager.getEntries();
    return entries.length ? entries[index % entries.length].id : undefined;
  };
  for (const [kind, ...args] of ops) {
    if (kind === "message") manager.appendMessage(args[0]);
    else if (kind === "model_change") manager.appendModelChange(args[0], args[1]);
    else if (kind === "thinking") manager.appendThinkingLevelChange(args[0]);
    else if (kind === "label") {
      const target = pick(args[0]);
      if (target !== undefined) manager.appendLabelChange(target, opt(args[1]));
    } else if (kind === "name") manager.appendSessionInfo(args[0]);
    else if (kind === "compaction") {
      const firstKept = args[0] === null ? null : pick(args[0]);
      manager.appendCompaction(args[1], firstKept ?? null, args[2], opt(args[3]), opt(args[4]));
    } else if (kind === "branch") {
      const target = pick(args[0]);
      if (target !== undefined) manager.branch(target);
    } else if (kind === "branch_summary") {
      const target = args[0] === null ? null : pick(args[0]);
      manager.branchWithSummary(target ?? null, args[1], opt(args[2]), opt(args[3]));
    } else if (kind === "reset_leaf") manager.resetLeaf();
    else if (kind === "custom") manager.appendCustomEntry(args[0], opt(args[1]));
    else if (kind === "custom_message") manager.appendCustomMessageEntry(args[0], args[1], args[2], opt(args[3]));
    else if (kind === "branched_session") {
      const target = pick(args[0]);
      if (target !== undefined) manager.createBranchedSession(target);
    } else if (kind === "reopen") {
      const file = manager.getSessionFile();
      if (file && existsSync(file)) manager = SessionManager.open(file);
    } else throw new Error(`unknown op ${kind}`);
  }
  return { file: manager.getSessionFile() ?? null };
}

// What Pi's session picker and /export do to a session file (tests/pi_compat/test_pi_reads_library_files.py):
// "rename" is the picker's rename (interactive-mode.js: the name trimmed, nothing done when empty, else
// SessionManager.open(file).appendSessionInfo(name)); "exportJsonl" is exportSessionToJsonl of the opened file.
function runLibrary({ op, file, name, out }) {
  if (op === "rename") {
    const next = (name ?? "").trim();
    if (!next) return { skipped: true };
    SessionManager.open(file).appendSessionInfo(next);
    return { file };
  }
  if (op === "exportJsonl") return { file: exportSessionToJsonl(SessionManager.open(file), out) };
  throw new Error(`unknown library op ${op}`);
}

// One request per stdin line, one response line per request, in order: a test session keeps
// one Node process alive and asks it about each file it writes (a few ms per file).
const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let response;
  try {
    const request = JSON.parse(line);
    if (request.library) {
      let done;
      try {
        done = runLibrary(request.library);
      } catch (error) {
        done = { error: String(error?.message ?? error) };
      }
      realStdoutWrite(`${JSON.stringify({ piVersion: pkg.version, node: process.version, library: done })}\n`);
      continue;
    }
    if (request.write) {
      let written;
      try {
        written = runProgram(request.write);
      } catch (error) {
        written = { error: String(error?.message ?? error) };
      }
      realStdoutWrite(`${JSON.stringify({ piVersion: pkg.version, node: process.version, written })}\n`);
      continue;
    }
    const results = request.files.map((file) => {
      try {
        return inspectFile(file);
      } catch (error) {
        return { file, error: `inspect failed: ${String(error?.message ?? error)}` };
      }
    });
    response = { piVersion: pkg.version, node: process.version, results };
  } catch (error) {
    response = { piVersion: pkg.version, node: process.version, error: String(error?.message ?? error) };
  }
  realStdoutWrite(`${JSON.stringify(response)}\n`);
}
