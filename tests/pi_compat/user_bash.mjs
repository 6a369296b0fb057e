// Pi 0.85.0's executor of client-run commands (the RPC `bash` command), for
// tests/pi_compat/test_user_bash_against_pi.py: `executeBashWithOperations` with the local bash
// operations, every onChunk delta collected.
//
// Input on stdin: {"cases": [{"id", "command", "cwd"}]}. Output: one JSON line per case
// {"id", "result", "chunks", "file"?} (`file`: the full-output temp file's content).

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const scope = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works", "pi-coding-agent", "dist");
const { executeBashWithOperations } = await import(pathToFileURL(join(scope, "core", "bash-executor.js")).href);
const { createLocalBashOperations } = await import(pathToFileURL(join(scope, "core", "tools", "bash.js")).href);

const { cases } = JSON.parse(readFileSync(0, "utf8"));
for (const c of cases) {
  const chunks = [];
  const result = await executeBashWithOperations(c.command, c.cwd, createLocalBashOperations(), {
    onChunk: (delta) => chunks.push(delta),
  });
  await new Promise((resolve) => setTimeout(resolve, 50)); // the temp file stream flushes
  const line = { id: c.id, result, chunks: chunks.join("") };
  if (result.fullOutputPath) line.file = readFileSync(result.fullOutputPath, "utf8");
  process.stdout.write(JSON.stringify(line) + "\n");
}
