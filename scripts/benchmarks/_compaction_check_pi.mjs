// Pi 0.85.0's compaction check's own lookup (agent-session.js: getLatestCompactionEntry(getBranch()),
// asked before every prompt and after every run) on a resumed session, for
// scripts/benchmarks/store.py. stdin: {"file", "sessionDir", "runs"}; per run two entries are
// appended first (a turn's user message and reply). stdout: {"ms": [...], "summary": latest's summary}.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dist = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works", "pi-coding-agent", "dist");
const { SessionManager, getLatestCompactionEntry } = await import(
  pathToFileURL(join(dist, "core/session-manager.js")).href
);
const input = JSON.parse(readFileSync(0, "utf8"));
const sm = SessionManager.open(input.file, input.sessionDir);
const user = (n) => ({ role: "user", content: [{ type: "text", text: `q${n}` }], timestamp: Date.now() });
const reply = { role: "assistant", content: [{ type: "text", text: "a" }], api: "openai-completions",
  provider: "loop", model: "loop-1", stopReason: "stop", timestamp: Date.now(),
  usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
           cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } } };
let latest = getLatestCompactionEntry(sm.getBranch());
const ms = [];
for (let i = 0; i < input.runs; i++) {
  sm.appendMessage(user(i));
  sm.appendMessage(reply);
  const start = performance.now();
  latest = getLatestCompactionEntry(sm.getBranch());
  ms.push(performance.now() - start);
}
process.stdout.write(JSON.stringify({ ms, summary: latest?.summary ?? null }));
