// Pi 0.85.0's `--continue` lookup (findMostRecentSession: every header + mtime) timed in one warm Node
// process, for scripts/benchmarks/_vs_sessions.py. stdin: {"dir", "runs"}; stdout: {"ms": [...], "path"}.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dist = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works", "pi-coding-agent", "dist");
const { findMostRecentSession } = await import(pathToFileURL(join(dist, "core", "session-manager.js")).href);
const input = JSON.parse(readFileSync(0, "utf8"));
const ms = [];
let path = null;
for (let i = 0; i < input.runs; i++) {
  const start = performance.now();
  path = findMostRecentSession(input.dir);
  ms.push(performance.now() - start);
}
process.stdout.write(JSON.stringify({ ms, path }));
