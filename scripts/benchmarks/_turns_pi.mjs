// Pi 0.85.0's executor of client-run commands, timed (scripts/benchmarks/turns.py).
// Input on stdin: {"command", "cwd", "runs"}; output: {"ms": [...], "chars": n}.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dist = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works", "pi-coding-agent", "dist");
const { executeBashWithOperations } = await import(pathToFileURL(join(dist, "core", "bash-executor.js")).href);
const { createLocalBashOperations } = await import(pathToFileURL(join(dist, "core", "tools", "bash.js")).href);
const { command, cwd, runs } = JSON.parse(readFileSync(0, "utf8"));
const ms = [];
let chars = 0;
for (let i = 0; i < runs; i++) {
  chars = 0;
  const start = performance.now();
  await executeBashWithOperations(command, cwd, createLocalBashOperations(), { onChunk: (d) => { chars += d.length; } });
  ms.push(performance.now() - start);
}
process.stdout.write(JSON.stringify({ ms, chars }));
