// Pi 0.85.0's token estimates (compaction.ts) for tests/pi_compat/test_usage_against_pi.py.
// Input on stdin: {"messages": [...]}; output: {"perMessage": [...], "context": n, "usage": [...]}.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const dir = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works", "pi-coding-agent", "dist");
const c = await import(pathToFileURL(join(dir, "core", "compaction", "compaction.js")).href);
const { messages } = JSON.parse(readFileSync(0, "utf8"));
const prefixes = messages.map((_, i) => c.estimateContextTokens(messages.slice(0, i + 1)).tokens);
process.stdout.write(JSON.stringify({
  perMessage: messages.map((m) => c.estimateTokens(m)),
  prefixes,
  usage: messages.filter((m) => m.usage).map((m) => c.calculateContextTokens(m.usage)),
}));
