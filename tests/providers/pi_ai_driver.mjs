// Pi 0.85.0's own providers, driven for rpcd's differential provider tests (tests/providers/pi_ai.py).
//
// One Node process serves many requests (NDJSON on stdin, one answer line per request on stdout):
//
//   {"id", "stream": {"api", "model", "context": {systemPrompt, messages, tools}, "options"}}
//     -> pi-ai's streamSimple(model, context, options) for that API, the context's messages first
//        through pi-coding-agent's convertToLlm (what the agent does before every call);
//        answers {"id", "events": [types...], "message": <final assistant message>}
//   {"id", "available": {"agentDir", "env": {...}, "unset": [...]}}
//     -> pi-coding-agent's ModelRuntime for that agent dir (auth.json + models.json) with that
//        environment; answers {"id", "models": [Model...]} (getAvailable(), Pi's order)
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
const modules = join(oracleDir, "node_modules", "@earendil-works");
const load = (...parts) => import(pathToFileURL(join(modules, ...parts)).href);
const { convertToLlm } = await load("pi-coding-agent", "dist", "core", "messages.js");
const { ModelRuntime } = await load("pi-coding-agent", "dist", "core", "model-runtime.js");
const apis = new Map();

async function stream({ api, model, context, options }) {
  if (!apis.has(api)) apis.set(api, await load("pi-ai", "dist", "api", `${api}.js`));
  const ctx = { ...context, messages: convertToLlm(context.messages ?? []) };
  const events = [];
  const s = apis.get(api).streamSimple(model, ctx, { maxRetries: 0, ...options });
  for await (const event of s) events.push(event.type);
  return { events, message: await s.result() };
}

async function available({ agentDir, env, unset }) {
  for (const name of unset ?? []) delete process.env[name];
  Object.assign(process.env, env ?? {});
  const runtime = await ModelRuntime.create({
    authPath: join(agentDir, "auth.json"),
    modelsPath: join(agentDir, "models.json"),
    allowModelNetwork: false,
  });
  const models = await runtime.getAvailable();
  return { models, error: runtime.getError() ?? null };
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let request;
  let answer;
  try {
    request = JSON.parse(line);
    if (request.stream) answer = await stream(request.stream);
    else if (request.available) answer = await available(request.available);
    else answer = { error: "unknown request" };
  } catch (error) {
    answer = { error: String(error?.stack ?? error) };
  }
  realStdoutWrite(`${JSON.stringify({ id: request?.id ?? null, ...answer })}\n`);
}
