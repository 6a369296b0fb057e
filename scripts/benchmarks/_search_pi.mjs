// Pi 0.85.0's own session search (the /resume picker: load every session of a directory with
// SessionManager.list, then filterAndSortSessions) timed in one warm Node process, for
// scripts/benchmarks/search.py. stdin: {"dir", "cwd", "queries", "runs"}; stdout: {query: [ms, ...], "hits": {query: n}}.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dist = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works", "pi-coding-agent", "dist");
const load = (file) => import(pathToFileURL(join(dist, file)).href);
const { SessionManager } = await load("core/session-manager.js");
const { filterAndSortSessions } = await load("modes/interactive/components/session-selector-search.js");
const input = JSON.parse(readFileSync(0, "utf8"));

const out = { hits: {} };
for (const query of input.queries) {
  const times = [];
  for (let i = 0; i < input.runs; i++) {
    const start = performance.now();
    const sessions = await SessionManager.list(input.cwd, input.dir);
    const found = filterAndSortSessions(sessions, query, "recent", "all");
    times.push(performance.now() - start);
    out.hits[query] = found.length;
  }
  out[query] = times;
}
process.stdout.write(JSON.stringify(out));
