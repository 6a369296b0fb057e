// Pi 0.85.0's own providers, driven for rpcd's differential provider tests (tests/providers/pi_ai.py).
//
// One Node process serves many requests (NDJSON on stdin, one answer line per request on stdout):
//
//   {"id", "stream": {"api", "model", "context": {systemPrompt, messages, tools}, "options", "attribution"?}}
//     -> pi-ai's streamSimple(model, context, options) for that API, the context's messages first
//        through pi-coding-agent's convertToLlm (what the agent does before every call); with
//        "attribution" (a settings object), the session's provider attribution headers first;
//        answers {"id", "events": [types...], "message": <final assistant message>}
//   {"id", "session": {"agentDir", "cwd", "env", "unset", "settings", "ops": [["setModel", p, id] |
//                                                   ["cycleModel", "forward"|"backward"]]}}
//     -> pi-coding-agent's createAgentSession (in-memory session, the given settings) then the
//        operations; answers {"id", "model", "thinkingLevel", "entries": [[kind, value]...]}
//   {"id", "runtimeStream": {"agentDir", "env", "unset", "settings", "provider", "modelId", "context", "options",
//                            "redirect"?: {origin: loopback origin}}}
//     -> the whole pi-coding-agent path of one model call: ModelRuntime for that agent dir (models.json
//        composition, auth, configured headers), sdk.ts's streamFn header transform (provider
//        attribution headers, gated by PI_TELEMETRY / settings.enableInstallTelemetry), then
//        ModelRuntime.streamSimple; answers like "stream" plus {"model": <the composed Model>}
//   {"id", "available": {"agentDir", "env": {...}, "unset": [...], "allowModelNetwork"?, "redirect"?}}
//     -> pi-coding-agent's ModelRuntime for that agent dir (auth.json + models.json + models-store.json)
//        with that environment; answers {"id", "models": [Model...]} (getAvailable(), Pi's order);
//        "allowModelNetwork" (with PI_OFFLINE unset): Pi refreshes its model lists first (Radius's
//        gateway config, pi.dev catalogs: "redirect" sends them to a loopback server) and stores them
//
// Environment: RPCD_PI_ORACLE_DIR = the directory holding node_modules/@earendil-works/*.

import { join } from "node:path";
import { createInterface } from "node:readline";
import zlib from "node:zlib";
import { pathToFileURL } from "node:url";

const realStdoutWrite = process.stdout.write.bind(process.stdout);
console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);

const oracleDir = process.env.RPCD_PI_ORACLE_DIR;
if (!oracleDir) {
  console.error("RPCD_PI_ORACLE_DIR is not set");
  process.exit(2);
}
const modules = join(oracleDir, "node_modules", "@earendil-works");
const load = (...parts) => import(pathToFileURL(join(modules, ...parts)).href);
const { convertToLlm } = await load("pi-coding-agent", "dist", "core", "messages.js");
const { ModelRuntime } = await load("pi-coding-agent", "dist", "core", "model-runtime.js");
const { createAgentSession } = await load("pi-coding-agent", "dist", "core", "sdk.js");
const { SessionManager } = await load("pi-coding-agent", "dist", "core", "session-manager.js");
const { SettingsManager } = await load("pi-coding-agent", "dist", "core", "settings-manager.js");
const { resolveModelScope } = await load("pi-coding-agent", "dist", "core", "model-resolver.js");
const { mergeProviderAttributionHeaders } = await load("pi-coding-agent", "dist", "core", "provider-attribution.js");
const apis = new Map();

async function stream({ api, model, context, options, attribution }) {
  if (!apis.has(api)) apis.set(api, await load("pi-ai", "dist", "api", `${api}.js`));
  const ctx = { ...context, messages: convertToLlm(context.messages ?? []) };
  const events = [];
  let headers = options?.headers;
  if (attribution !== undefined) {
    // the session's header transform (sdk.ts streamFn), with these settings (PI_TELEMETRY is "0" here)
    const settingsManager = SettingsManager.inMemory(attribution);
    headers = mergeProviderAttributionHeaders(model, settingsManager, options?.sessionId, headers);
  }
  const { plainBody, ...rest } = options ?? {};
  const extra = plainBody ? { fetch: plainBodyFetch } : {};
  const s = apis.get(api).streamSimple(model, ctx, { maxRetries: 0, ...rest, ...extra, headers });
  for await (const event of s) events.push(event.type);
  return { events, message: await s.result() };
}

// "plainBody": the request body as Pi built it, before its zstd compression (OpenAI Codex compresses
// when this Node has zstd): the loopback server records JSON, and the header says it was compressed
async function plainBodyFetch(url, init) {
  const headers = new Headers(init?.headers);
  let body = init?.body;
  if (headers.get("content-encoding") === "zstd") {
    body = zlib.zstdDecompressSync(Buffer.from(body));
    headers.delete("content-encoding");
    headers.set("x-pi-content-encoding", "zstd");
  }
  return globalThis.fetch(url, { ...init, headers, body });
}

// "redirect": {"https://platform.claude.com": "http://127.0.0.1:PORT"} sends Pi's requests to those
// origins (its OAuth endpoints are fixed in pi-ai) to a loopback server instead, for one call
function installRedirect(redirect) {
  const original = globalThis.fetch;
  if (!redirect || Object.keys(redirect).length === 0) return () => {};
  globalThis.fetch = (input, init) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
    for (const [from, to] of Object.entries(redirect)) {
      if (url.startsWith(from)) return original(to + url.slice(from.length), init);
    }
    return original(input, init);
  };
  return () => { globalThis.fetch = original; };
}

// run(request) with the request's environment, restored afterwards: other requests share this process
async function withRequestEnv(request, run) {
  const touched = [...(request.unset ?? []), ...Object.keys(request.env ?? {})];
  const saved = Object.fromEntries(touched.map((name) => [name, process.env[name]]));
  try {
    return await run(request);
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

async function runtimeStream(request) {
  const restoreFetch = installRedirect(request.redirect);
  try {
    return await withRequestEnv(request, runtimeStreamIn);
  } finally {
    restoreFetch();
  }
}

async function runtimeStreamIn({ agentDir, env, unset, settings, provider, modelId, context, options }) {
  setEnv(env, unset);
  const runtime = await ModelRuntime.create({
    authPath: join(agentDir, "auth.json"),
    modelsPath: join(agentDir, "models.json"),
    allowModelNetwork: false,
  });
  const model = runtime.getModel(provider, modelId);
  if (!model) return { error: `no model ${provider}/${modelId}: ${runtime.getError() ?? ""}` };
  const settingsManager = SettingsManager.inMemory(settings ?? {});
  const ctx = { ...context, messages: convertToLlm(context.messages ?? []) };
  const events = [];
  const s = runtime.streamSimple(model, ctx, {
    maxRetries: 0,
    ...options,
    transformHeaders: async (requestHeaders) =>
      mergeProviderAttributionHeaders(model, settingsManager, options?.sessionId, requestHeaders) ?? {},
  });
  for await (const event of s) events.push(event.type);
  return { events, message: await s.result(), model };
}

async function available(request) {
  const restoreFetch = installRedirect(request.redirect);
  try {
    return await withRequestEnv(request, availableIn);
  } finally {
    restoreFetch();
  }
}

async function availableIn({ agentDir, env, unset, allowModelNetwork }) {
  setEnv(env, unset);
  const runtime = await ModelRuntime.create({
    authPath: join(agentDir, "auth.json"),
    modelsPath: join(agentDir, "models.json"),
    allowModelNetwork: allowModelNetwork === true,
  });
  const models = await runtime.getAvailable();
  return { models, error: runtime.getError() ?? null };
}

function setEnv(env, unset) {
  for (const name of unset ?? []) delete process.env[name];
  Object.assign(process.env, env ?? {});
}

async function session({ agentDir, cwd, env, unset, settings, ops }) {
  setEnv(env, unset);
  const modelRuntime = await ModelRuntime.create({
    authPath: join(agentDir, "auth.json"),
    modelsPath: join(agentDir, "models.json"),
    allowModelNetwork: false,
  });
  const sessionManager = SessionManager.inMemory(cwd);
  const settingsManager = SettingsManager.inMemory(settings ?? {});
  // main.ts buildSessionOptions (no CLI flags): enabledModels become the scope, and a new session
  // starts on the saved default if it is in scope, else on the first scoped model
  const patterns = settingsManager.getEnabledModels();
  const scoped = patterns?.length ? await resolveModelScope(patterns, modelRuntime) : [];
  const options = {};
  if (scoped.length > 0) {
    const saved = modelRuntime.getModel(settingsManager.getDefaultProvider(), settingsManager.getDefaultModel());
    const inScope = saved && scoped.find((sm) => sm.model.provider === saved.provider && sm.model.id === saved.id);
    const first = inScope ?? scoped[0];
    options.model = first.model;
    if (first.thinkingLevel) options.thinkingLevel = first.thinkingLevel;
    options.scopedModels = scoped.map((sm) => ({ model: sm.model, thinkingLevel: sm.thinkingLevel }));
  }
  const { session: s } = await createAgentSession({
    cwd, agentDir, sessionManager, settingsManager, modelRuntime, ...options,
  });
  const results = [];
  for (const [op, a, b] of ops ?? []) {
    if (op === "setModel") {
      await s.setModel(modelRuntime.getModel(a, b));
      results.push(null);
    } else if (op === "cycleModel") {
      const r = await s.cycleModel(a);
      results.push(r ? { model: `${r.model.provider}/${r.model.id}`, thinkingLevel: r.thinkingLevel, isScoped: r.isScoped } : null);
    }
  }
  const entries = sessionManager.getEntries().map((e) =>
    e.type === "model_change" ? ["model", `${e.provider}/${e.modelId}`]
      : e.type === "thinking_level_change" ? ["thinking", e.thinkingLevel] : [e.type]);
  return {
    model: s.model ? `${s.model.provider}/${s.model.id}` : null,
    thinkingLevel: s.thinkingLevel,
    entries,
    results,
  };
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let request;
  let answer;
  try {
    request = JSON.parse(line);
    if (request.stream) answer = await stream(request.stream);
    else if (request.runtimeStream) answer = await runtimeStream(request.runtimeStream);
    else if (request.available) answer = await available(request.available);
    else if (request.session) answer = await session(request.session);
    else answer = { error: "unknown request" };
  } catch (error) {
    answer = { error: String(error?.stack ?? error) };
  }
  realStdoutWrite(`${JSON.stringify({ id: request?.id ?? null, ...answer })}\n`);
}
