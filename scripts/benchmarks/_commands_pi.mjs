// Pi 0.85.0's own skill/template loading and template expansion, timed in one warm Node process,
// for scripts/benchmarks/commands.py.
// stdin: {"cwd", "agentDir", "runs", "expand": {"text", "count"}}; stdout: {"load": [ms...], "expand": [ms...]}.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dist = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works", "pi-coding-agent", "dist", "core");
const { loadSkills } = await import(pathToFileURL(join(dist, "skills.js")).href);
const { loadPromptTemplates, expandPromptTemplate } = await import(pathToFileURL(join(dist, "prompt-templates.js")).href);
const input = JSON.parse(readFileSync(0, "utf8"));
const options = { cwd: input.cwd, agentDir: input.agentDir, includeDefaults: true };
const out = { load: [], expand: [], counts: null };
let templates = [];
for (let i = 0; i < input.runs + 1; i++) {
  const start = performance.now();
  const skills = loadSkills({ ...options, skillPaths: [] });
  templates = loadPromptTemplates({ ...options, promptPaths: [] });
  const ms = performance.now() - start;
  if (i > 0) out.load.push(ms); // the first run warms the JIT and the page cache
  out.counts = { skills: skills.skills.length, templates: templates.length };
}
for (let i = 0; i < input.runs; i++) {
  const start = performance.now();
  for (let n = 0; n < input.expand.count; n++) expandPromptTemplate(input.expand.text, templates);
  out.expand.push(performance.now() - start);
}
process.stdout.write(JSON.stringify(out));
