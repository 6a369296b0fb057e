// Pi 0.85.0 blocking a tool call, for tests/pi_compat/test_rejection_is_pis_blocked_call.py.
//
// argv: <cwd> <agentDir> <reason>. A real AgentSession (createAgentSession, Pi's own resource
// loader and session file) whose model (pi-ai's faux provider) calls bash once and then answers;
// an inline extension's tool_call handler blocks the call with <reason>, as a permission gate
// does. Prints {"file": <session file>} and the events Pi emitted for the call.
//
// Environment: RPCD_PI_ORACLE_DIR; the caller sets HOME, PI_OFFLINE, PI_TELEMETRY.

import { join } from "node:path";
import { pathToFileURL } from "node:url";

const out = process.stdout.write.bind(process.stdout);
console.log = (...args) => console.error(...args);
console.info = (...args) => console.error(...args);

const modules = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works");
const load = (...parts) => import(pathToFileURL(join(modules, ...parts)).href);
const ai = await load("pi-ai", "dist", "index.js");
const pi = await load("pi-coding-agent", "dist", "index.js");

const [cwd, agentDir, reason] = process.argv.slice(2);
const faux = ai.fauxProvider({ provider: "faux", models: [{ id: "faux-1" }] });
faux.setResponses([
  ai.fauxAssistantMessage([ai.fauxToolCall("bash", { command: "touch ran" }, { id: "c1" })], { stopReason: "toolUse" }),
  ai.fauxAssistantMessage("done"),
]);
const settingsManager = pi.SettingsManager.inMemory({});
const gate = (api) => api.on("tool_call", (event) => (event.toolName === "bash" ? { block: true, reason } : undefined));
const resourceLoader = new pi.DefaultResourceLoader({
  cwd, agentDir, settingsManager, noContextFiles: true, noSkills: true, extensionFactories: [gate],
});
await resourceLoader.reload();
const sessionManager = pi.SessionManager.create(cwd, join(agentDir, "sessions"));
const modelRuntime = await pi.ModelRuntime.create({
  authPath: join(agentDir, "auth.json"), modelsPath: null, allowModelNetwork: false,
});
modelRuntime.registerNativeProvider(faux.provider);
const { session } = await pi.createAgentSession({
  cwd, agentDir, sessionManager, settingsManager, modelRuntime, resourceLoader, model: faux.getModel(),
});
const events = [];
session.subscribe((event) => {
  if (event.type.startsWith("tool_execution")) events.push(JSON.parse(JSON.stringify(event)));
});
await session.prompt("go");
out(`${JSON.stringify({ file: sessionManager.getSessionFile(), events })}\n`);
process.exit(0);
