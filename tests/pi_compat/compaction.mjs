// Pi 0.85.0's own compaction functions, for rpcd's differential tests
// (tests/pi_compat/test_compaction_against_pi.py).
//
// One Node process serves many requests: NDJSON on stdin, one answer line per request on stdout.
//
//   {"id", "prepare": {"file", "leafId"?, "settings": {enabled, reserveTokens, keepRecentTokens},
//                      "model": Model, "thinkingLevel", "customInstructions"?, "thresholds": [[tokens, window]]}}
//     -> SessionManager.open(file).getBranch(leafId) through findCutPoint, estimateTokens,
//        estimateContextTokens, prepareCompaction, serializeConversation(convertToLlm(...)),
//        shouldCompact, and compact() with a stream function that records every summary
//        request (the model answers "summary <n>"); answers what each of them returned.
//   {"id", "branch": {"file", "oldLeafId", "targetId", "reserveTokens", "model", "customInstructions"?,
//                     "replaceInstructions"?}}
//     -> collectEntriesForBranchSummary, prepareBranchEntries(entries, contextWindow - reserveTokens)
//        and generateBranchSummary with the recording stream function.
//
// Environment: RPCD_PI_ORACLE_DIR = the directory holding node_modules/@earendil-works/*.

import { join } from "node:path";
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const realStdoutWrite = process.stdout.write.bind(process.stdout);
console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);

const oracleDir = process.env.RPCD_PI_ORACLE_DIR;
if (!oracleDir) {
  console.error("RPCD_PI_ORACLE_DIR is not set");
  process.exit(2);
}
const agent = join(oracleDir, "node_modules", "@earendil-works", "pi-coding-agent", "dist");
const load = (...parts) => import(pathToFileURL(join(agent, ...parts)).href);
// The public exports (what the issue names) ...
const pi = await load("index.js");
// ... and prepareCompaction / estimateContextTokens, which the root does not re-export.
const compaction = await load("core", "compaction", "compaction.js");
const { convertToLlm } = await load("core", "messages.js");
const { SessionManager, buildSessionContext, sessionEntryToContextMessages } = await load("core", "session-manager.js");

const plain = (value) => (value === undefined ? null : JSON.parse(JSON.stringify(value)));

function recorder(answers) {
  const requests = [];
  const streamFn = async (model, context, options) => {
    requests.push({
      systemPrompt: context.systemPrompt,
      messages: context.messages.map((m) => ({ role: m.role, content: m.content })),
      tools: context.tools ?? null,
      maxTokens: options.maxTokens ?? null,
      reasoning: options.reasoning ?? null,
      cacheRetention: options.cacheRetention ?? null,
      hasSessionId: typeof options.sessionId === "string" && options.sessionId.length > 0,
    });
    const n = requests.length;
    const answer = answers?.[n - 1] ?? { text: `summary ${n}` };
    const message = {
      role: "assistant",
      content: [{ type: "text", text: answer.text }],
      api: model.api,
      provider: model.provider,
      model: model.id,
      usage: { input: 10 * n, output: n, cacheRead: 0, cacheWrite: 0, totalTokens: 11 * n,
               cost: { input: 0.5, output: 0.25, cacheRead: 0, cacheWrite: 0, total: 0.75 } },
      stopReason: answer.stopReason ?? "stop",
      ...(answer.errorMessage ? { errorMessage: answer.errorMessage } : {}),
      timestamp: 0,
    };
    return { result: async () => message };
  };
  return { requests, streamFn };
}

function boundaryStart(path) {
  for (let i = path.length - 1; i >= 0; i--) {
    if (path[i].type === "compaction") {
      const found = path.findIndex((e) => e.id === path[i].firstKeptEntryId);
      return found >= 0 ? found : i + 1;
    }
  }
  return 0;
}

const fileOps = (ops) => ({ read: [...ops.read], written: [...ops.written], edited: [...ops.edited] });

async function prepare(req) {
  const sm = SessionManager.open(req.file);
  const path = req.leafId ? sm.getBranch(req.leafId) : sm.getBranch();
  const settings = req.settings;
  const start = boundaryStart(path);
  const cut = pi.findCutPoint(path, start, path.length, settings.keepRecentTokens);
  const estimates = path.map((e) =>
    e.type === "compaction" || e.type === "message" || e.type === "custom_message" || e.type === "branch_summary"
      ? sessionEntryToContextMessages(e).reduce((sum, m) => sum + pi.estimateTokens(m), 0)
      : 0,
  );
  const context = compaction.estimateContextTokens(buildSessionContext(path).messages);
  const thresholds = (req.thresholds ?? []).map(([tokens, window]) => pi.shouldCompact(tokens, window, settings));
  const preparation = compaction.prepareCompaction(path, settings);
  const out = { pathIds: path.map((e) => e.id), boundaryStart: start, cut, estimates, context, thresholds };
  if (!preparation) return { ...out, preparation: null };
  out.preparation = {
    firstKeptEntryId: preparation.firstKeptEntryId,
    isSplitTurn: preparation.isSplitTurn,
    tokensBefore: preparation.tokensBefore,
    previousSummary: preparation.previousSummary ?? null,
    fileOps: fileOps(preparation.fileOps),
    messagesToSummarize: plain(preparation.messagesToSummarize),
    turnPrefixMessages: plain(preparation.turnPrefixMessages),
  };
  out.serialized = pi.serializeConversation(convertToLlm(preparation.messagesToSummarize));
  out.serializedPrefix = pi.serializeConversation(convertToLlm(preparation.turnPrefixMessages));
  const { requests, streamFn } = recorder(req.answers);
  try {
    out.result = plain(await pi.compact(preparation, req.model, "key", undefined, req.customInstructions,
      undefined, req.thinkingLevel, streamFn, undefined, { enabled: false, maxRetries: 0, baseDelayMs: 0 }));
  } catch (error) {
    out.error = String(error?.message ?? error);
  }
  out.requests = requests;
  return out;
}

async function branch(req) {
  const sm = SessionManager.open(req.file);
  const collected = pi.collectEntriesForBranchSummary(sm, req.oldLeafId, req.targetId);
  const budget = (req.model.contextWindow || 128000) - req.reserveTokens;
  const prepared = pi.prepareBranchEntries(collected.entries, budget);
  const { requests, streamFn } = recorder(req.answers);
  const result = await pi.generateBranchSummary(collected.entries, {
    model: req.model, apiKey: "key", signal: new AbortController().signal,
    customInstructions: req.customInstructions, replaceInstructions: req.replaceInstructions,
    reserveTokens: req.reserveTokens, streamFn, retry: { enabled: false, maxRetries: 0, baseDelayMs: 0 },
  });
  return {
    entryIds: collected.entries.map((e) => e.id),
    commonAncestorId: collected.commonAncestorId,
    prepared: { messages: plain(prepared.messages), fileOps: fileOps(prepared.fileOps), totalTokens: prepared.totalTokens },
    result: plain(result),
    requests,
  };
}

const handlers = { prepare, branch };
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  let request;
  let answer;
  try {
    request = JSON.parse(line);
    const kind = Object.keys(handlers).find((k) => k in request);
    answer = { id: request.id, ...(await handlers[kind](request[kind])) };
  } catch (error) {
    answer = { id: request?.id ?? null, crash: String(error?.stack ?? error) };
  }
  realStdoutWrite(JSON.stringify(answer) + "\n");
}
