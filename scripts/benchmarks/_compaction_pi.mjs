// Pi 0.85.0 preparing a compaction, for scripts/benchmarks/compaction.py. One warm Node process;
// stdin: NDJSON, first {"files": {name: path}, "settings"}, then one {"run": name} per timed run
// (the Python side alternates its own runs with these, so both see the same machine load);
// stdout: one line per line in, {"ms", "check"} for a run.
// Timed per run: getBranch() + prepareCompaction (findCutPoint, estimateContextTokens over the
// rebuilt context, the messages to summarize, file operations) + serializeConversation(convertToLlm(...))
// of the messages to summarize and of a split turn's prefix: everything before the summary call.
import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const agent = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works", "pi-coding-agent", "dist");
const load = (...parts) => import(pathToFileURL(join(agent, ...parts)).href);
const pi = await load("index.js");
const { prepareCompaction } = await load("core", "compaction", "compaction.js");
const { convertToLlm } = await load("core", "messages.js");
const managers = {};
let settings;
for await (const line of createInterface({ input: process.stdin })) {
  const request = JSON.parse(line);
  if (request.files) {
    for (const [name, file] of Object.entries(request.files)) managers[name] = pi.SessionManager.open(file);
    settings = request.settings;
    process.stdout.write("{}\n");
    continue;
  }
  const sm = managers[request.run];
  const start = performance.now();
  const preparation = prepareCompaction(sm.getBranch(), settings);
  const text = pi.serializeConversation(convertToLlm(preparation.messagesToSummarize));
  const prefix = pi.serializeConversation(convertToLlm(preparation.turnPrefixMessages));
  const ms = performance.now() - start;
  const check = { firstKeptEntryId: preparation.firstKeptEntryId, tokensBefore: preparation.tokensBefore,
                  messages: preparation.messagesToSummarize.length, chars: text.length + prefix.length };
  process.stdout.write(JSON.stringify({ ms, check }) + "\n");
}
