// Pi 0.85.0's own RPC client (dist/modes/rpc/rpc-client.js, as an embedding tool uses it) driving
// one agent process: real `pi --mode rpc` (cliPath: Pi's cli.js) or rpcd (cliPath: rpcd_shim.mjs).
// argv: [cliPath, cwd, ...agent args]; prints one JSON document: each call's result (or error
// message) in order, and the events each prompt collected.
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const scope = join(process.env.RPCD_PI_ORACLE_DIR, "node_modules", "@earendil-works", "pi-coding-agent");
const { RpcClient } = await import(pathToFileURL(join(scope, "dist", "modes", "rpc", "rpc-client.js")).href);

const [cliPath, cwd, ...args] = process.argv.slice(2);
const client = new RpcClient({ cliPath, cwd, args, env: {} });
const calls = [];
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function record(name, run) {
  try {
    calls.push([name, (await run()) ?? null]);
  } catch (error) {
    calls.push([name, { error: String(error.message).split(". Stderr:")[0] }]);
  }
}

await client.start();
// Pi drops what reaches its stdin before its RPC mode reads it: ask until it answers.
for (let ready = false; !ready;) {
  ready = await Promise.race([client.getState().then(() => true, () => false), sleep(250).then(() => false)]);
}

await record("getState", () => client.getState());
await record("getAvailableModels", () => client.getAvailableModels());
await record("setModel", () => client.setModel("faux", "faux-1"));
await record("setModel (unknown)", () => client.setModel("faux", "nope"));
await record("cycleModel", () => client.cycleModel());
await record("getAvailableThinkingLevels", () => client.getAvailableThinkingLevels());
await record("setThinkingLevel", () => client.setThinkingLevel("low"));
await record("cycleThinkingLevel", () => client.cycleThinkingLevel());
await record("setSteeringMode", () => client.setSteeringMode("one-at-a-time"));
await record("setFollowUpMode", () => client.setFollowUpMode("all"));
await record("setAutoCompaction", () => client.setAutoCompaction(true));
await record("setAutoRetry", () => client.setAutoRetry(true));
await record("abortRetry", () => client.abortRetry());
await record("promptAndWait", () => client.promptAndWait("hello client"));
await record("promptAndWait (tool)", async () => {
  const events = client.collectEvents();
  // listening before the prompt is sent: the answer and the turn's first lines can arrive in one read,
  // and the client dispatches all of them before the awaiting code goes on (a listener added after
  // `await client.prompt()` can miss an event that came with the answer)
  const toolStarted = new Promise((resolve) => {
    const stop = client.onEvent((event) => {
      if (event.type === "tool_execution_start") {
        stop();
        resolve();
      }
    });
  });
  await client.prompt("run the slow tool");
  await toolStarted;
  await client.steer("steered in");
  await client.followUp("followed up");
  return events;
});
await record("waitForIdle", async () => {
  // the state may still say streaming for a moment after agent_settled
  while ((await client.getState()).isStreaming) await sleep(50);
});
await record("getMessages", () => client.getMessages());
await record("bash", () => client.bash("echo from the client"));
await record("abortBash", () => client.abortBash());
await record("getSessionStats", () => client.getSessionStats());
await record("getLastAssistantText", () => client.getLastAssistantText());
await record("setSessionName", () => client.setSessionName("client session"));
await record("getCommands", () => client.getCommands());
await record("getForkMessages", () => client.getForkMessages());
await record("getEntries", () => client.getEntries());
await record("getTree", () => client.getTree());
await record("exportHtml", () => client.exportHtml("client.html"));
await record("compact", () => client.compact("short"));
await record("clearQueue", () => client.clearQueue());
await record("abort", () => client.abort());
const first = (await client.getState()).sessionFile;
await record("fork", async () => client.fork((await client.getForkMessages())[0].entryId));
await record("getState (fork)", () => client.getState());
await record("clone", () => client.clone());
await record("newSession", () => client.newSession(first));
await record("switchSession", () => client.switchSession(first));
await record("getState (switched)", () => client.getState());
await client.stop();
process.stdout.write(JSON.stringify({ calls, stderr: client.getStderr().slice(-2000) }));
