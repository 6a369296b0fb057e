// Pi 0.85.0's own tools timed in one warm Node process, for scripts/benchmarks/tools.py.
// stdin: {"ops": [{"name", "tool", "cwd", "args", "runs"}]}; stdout: {"name": [ms, ...], ...}.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const scope = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works");
const pi = await import(pathToFileURL(join(scope, "pi-coding-agent", "dist", "index.js")).href);
const creators = { read: pi.createReadTool, grep: pi.createGrepTool, find: pi.createFindTool, ls: pi.createLsTool };
const input = JSON.parse(readFileSync(0, "utf8"));
const out = {};
for (const op of input.ops) {
  const tool = creators[op.tool](op.cwd);
  const times = [];
  for (let i = 0; i < op.runs; i++) {
    const start = performance.now();
    const result = await tool.execute("bench", structuredClone(op.args), undefined, undefined);
    times.push(performance.now() - start);
    if (i === 0) out[`${op.name}:text`] = result.content[0].text.slice(0, 200);
  }
  out[op.name] = times;
}
process.stdout.write(JSON.stringify(out));
