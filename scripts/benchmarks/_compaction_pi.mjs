// Pi 0.85.0 preparing a compaction, timed in one warm Node process, for scripts/benchmarks/compaction.py.
// stdin: {"files": [{"name", "file", "runs"}], "settings"}; stdout: {"name": [ms, ...], "name:check": {...}}.
// Timed per run: getBranch() + prepareCompaction (findCutPoint, estimateContextTokens over the
// rebuilt context, the messages to summarize, file operations) + serializeConversation(convertToLlm(...))
// of the messages to summarize and of a split turn's prefix: everything before the summary call.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const agent = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works", "pi-coding-agent", "dist");
const load = (...parts) => import(pathToFileURL(join(agent, ...parts)).href);
const pi = await load("index.js");
const { prepareCompaction } = await load("core", "compaction", "compaction.js");
const { convertToLlm } = await load("core", "messages.js");
const input = JSON.parse(readFileSync(0, "utf8"));
const out = {};
for (const { name, file, runs } of input.files) {
  const sm = pi.SessionManager.open(file);
  const times = [];
  let check;
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    const preparation = prepareCompaction(sm.getBranch(), input.settings);
    const text = pi.serializeConversation(convertToLlm(preparation.messagesToSummarize));
    const prefix = pi.serializeConversation(convertToLlm(preparation.turnPrefixMessages));
    times.push(performance.now() - start);
    check = { firstKeptEntryId: preparation.firstKeptEntryId, tokensBefore: preparation.tokensBefore,
              messages: preparation.messagesToSummarize.length, chars: text.length + prefix.length };
  }
  out[name] = times;
  out[`${name}:check`] = check;
}
process.stdout.write(JSON.stringify(out));
