// Pi 0.85.0's own session-library operations timed in one warm Node process, for
// scripts/benchmarks/sessions.py. stdin: {"dir", "cwd", "big", "out", "runs"}; stdout: {"name": [ms, ...]}.
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dist = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works", "pi-coding-agent", "dist");
const load = (file) => import(pathToFileURL(join(dist, file)).href);
const { SessionManager, findMostRecentSession } = await load("core/session-manager.js");
const { exportSessionToJsonl } = await load("core/session-export.js");
const { exportFromFile } = await load("core/export-html/index.js");
const input = JSON.parse(readFileSync(0, "utf8"));

async function timed(runs, fn) {
  const times = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await fn(i);
    times.push(performance.now() - start);
  }
  return times;
}

const out = {};
out.list = await timed(input.runs, () => SessionManager.list(input.cwd, input.dir));
out.mostRecent = await timed(input.runs, () => findMostRecentSession(input.dir, input.cwd));
out.exportHtml = await timed(input.runs, async (i) => {
  const path = join(input.out, `pi-${i}.html`);
  await exportFromFile(input.big, path);
  rmSync(path);
});
out.exportJsonl = await timed(input.runs, (i) => {
  const path = join(input.out, `pi-${i}.jsonl`);
  exportSessionToJsonl(SessionManager.open(input.big), path);
  rmSync(path);
});
process.stdout.write(JSON.stringify(out));
