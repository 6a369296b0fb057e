// rpcd's extension host: Pi 0.85.0's TypeScript/JavaScript extensions in a Node process of their own,
// speaking JSON-RPC 2.0 (one JSON object per line) with the daemon over stdin/stdout.
//
// It loads extensions as Pi's loader does (core/extensions/loader.js: jiti with Pi's module aliases,
// `moduleCache: false`, the default export awaited as the factory, registrations committed only when
// the factory returns) and hands each one Pi's `pi` object, whose every action is a call into the
// daemon's extension API: the daemon owns the session, the checks on every value and the order in
// which handlers of all extensions run; this process only runs extension code when asked (an
// event's handler, a tool, a command, a provider's stream) and answers with what it returned.
//
// Members Pi's API answers at once (`pi.getActiveTools()`, `ctx.sessionManager.getEntries()`, ...)
// are synchronous calls: the request is written and the main thread waits (Atomics.wait) until the
// reader thread (reader.mjs) hands over the answer. stdout carries the protocol only: console output
// and anything an extension writes to `process.stdout` go to stderr; `process.exit()` in an
// extension throws instead of ending the host.

import { AsyncLocalStorage } from "node:async_hooks";
import { Console } from "node:console";
import { readFileSync, writeSync } from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import * as path from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { MessageChannel, receiveMessageOnPort, Worker } from "node:worker_threads";

const PROTOCOL_VERSION = 1;
const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

// -- stdio: stdout is the protocol's --------------------------------------------------------------

const stderr = process.stderr;
globalThis.console = new Console({ stdout: stderr, stderr });
Object.defineProperty(process, "stdout", { configurable: true, enumerable: true, get: () => stderr });
const emptyStdin = new Readable({ read() { this.push(null); } });
Object.defineProperty(process, "stdin", { configurable: true, enumerable: true, get: () => emptyStdin });

class ExitCalled extends Error {
  constructor(code) {
    super(`process.exit(${code ?? ""}) was called by an extension; the extension host keeps running`);
    this.name = "ExitCalled";
  }
}
const realExit = process.exit.bind(process);
process.exit = (code) => { throw new ExitCalled(code); };
process.reallyExit = () => { throw new ExitCalled(); };

// A child an extension starts with inherited stdio would read the protocol's stdin and write into its
// stdout: its stdin is /dev/null and its stdout the host's stderr instead (as Pi's own spawns do once
// its RPC mode has taken stdout over). `fork` inherits by default, so it gets the same.
const childProcess = createRequire(import.meta.url)("node:child_process");
const INHERITED_IN = new Set(["inherit", 0]);
const INHERITED_OUT = new Set(["inherit", 1]);

function keptOffTheProtocol(stdio, forked) {
  if (stdio === undefined) return forked ? ["ignore", 2, 2, "ipc"] : undefined;
  if (stdio === "inherit") return forked ? ["ignore", 2, 2, "ipc"] : ["ignore", 2, 2];
  if (!Array.isArray(stdio)) return stdio;
  return stdio.map((entry, index) => (index === 0 && (INHERITED_IN.has(entry) || entry === process.stdin) ? "ignore"
    : index === 1 && INHERITED_OUT.has(entry) ? 2 : entry));
}

for (const name of ["spawn", "spawnSync", "execFileSync", "execSync", "fork"]) {
  const original = childProcess[name];
  const forked = name === "fork";
  childProcess[name] = function (...args) {
    const last = args.length > 1 ? args[args.length - 1] : undefined;
    const hasOptions = last !== null && typeof last === "object" && !Array.isArray(last);
    const options = hasOptions ? last : {};
    if (!(forked && options.silent)) {
      const stdio = keptOffTheProtocol(options.stdio, forked);
      if (stdio !== options.stdio) {
        if (hasOptions) args[args.length - 1] = { ...options, stdio };
        else args.push({ stdio });
      }
    }
    return original.apply(this, args);
  };
}
syncBuiltinESMExports();

// -- the wire -----------------------------------------------------------------------------------------

let outgoing = [];
let flushScheduled = false;

function writeAll(text) {
  let buffer = Buffer.from(text, "utf8");
  const pause = new Int32Array(new SharedArrayBuffer(4));
  while (buffer.length > 0) {
    try {
      const written = writeSync(1, buffer);
      buffer = buffer.subarray(written);
    } catch (error) {
      if (error.code === "EAGAIN") {
        Atomics.wait(pause, 0, 0, 2);
        continue;
      }
      if (error.code === "EPIPE") realExit(0); // the daemon is gone
      throw error;
    }
  }
}

function flush() {
  flushScheduled = false;
  if (outgoing.length === 0) return;
  const text = outgoing.join("");
  outgoing = [];
  writeAll(text);
}

/** Queue one message; messages of one turn of the event loop go out in one write (batched). */
function send(message) {
  outgoing.push(`${JSON.stringify(message)}\n`);
  if (!flushScheduled) {
    flushScheduled = true;
    setImmediate(flush);
  }
}

// Every line rpcd writes arrives through `port` in order (reader.mjs); `sync[0]` is set when one
// came, so a synchronous call can wait for its answer with Atomics.wait.
const sync = new Int32Array(new SharedArrayBuffer(4));
const channel = new MessageChannel();
const reader = new Worker(path.join(here, "reader.mjs"), {
  workerData: { sync: sync.buffer, port: channel.port2 },
  transferList: [channel.port2],
});
let syncSeq = 0;
let daemonGone = false;
const inbox = [];
/** The synchronous calls waiting, innermost last ("s<n>"). */
const syncStack = [];
const syncAnswers = new Map();

class RemoteError extends Error {
  constructor(error) {
    super(typeof error?.message === "string" ? error.message : "rpcd refused the call");
    this.name = typeof error?.data?.type === "string" ? error.data.type : "Error";
    this.code = error?.code;
  }
}

const callContext = new AsyncLocalStorage();
/** Which daemon call the code now running serves (its time waiting on the daemon is not its own). */
function during() {
  return callContext.getStore()?.call;
}

function pull() {
  for (;;) {
    const received = receiveMessageOnPort(channel.port1);
    if (received === undefined) return;
    const line = received.message;
    if (line === null) {
      inbox.push(null);
      continue;
    }
    try {
      inbox.push(JSON.parse(line));
    } catch {
      console.error("rpcd extension host: a line that is not JSON was ignored");
    }
  }
}

/**
 * A synchronous call: the answer, or the daemon's refusal thrown as an Error. While it waits, what
 * rpcd sends on its behalf (marked `nested`: the handlers of an event the call set off, as Pi runs a
 * `void emit` to its first await inside the call) runs at once; everything else waits its turn.
 */
function callSync(method, params) {
  if (daemonGone) throw new Error("rpcd is gone");
  const id = `s${++syncSeq}`;
  syncStack.push(id);
  try {
    outgoing.push(`${JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, during: during() } })}\n`);
    flush();
    for (;;) {
      Atomics.store(sync, 0, 0);
      pull();
      let index = 0;
      while (index < inbox.length) {
        const message = inbox[index];
        if (message === null) {
          daemonGone = true;
          throw new Error("rpcd is gone");
        }
        if (message.method === undefined && typeof message.id === "string" && message.id.startsWith("s")) {
          inbox.splice(index, 1);
          syncAnswers.set(message.id, message);
          continue;
        }
        if (message.method !== undefined && syncStack.includes(message.params?.nested)) {
          inbox.splice(index, 1);
          handle(message);
          index = 0;
          continue;
        }
        index += 1;
      }
      if (syncAnswers.has(id)) break;
      Atomics.wait(sync, 0, 0, 1000);
    }
  } finally {
    syncStack.pop();
    if (syncStack.length === 0 && inbox.length > 0) setImmediate(pump);
  }
  const answer = syncAnswers.get(id);
  syncAnswers.delete(id);
  if (answer.error) throw new RemoteError(answer.error);
  return answer.result;
}

let callSeq = 0;
const pendingCalls = new Map();

/** An asynchronous call (dialogs, exec, session control): a promise of the answer. */
function callAsync(method, params, signal) {
  if (daemonGone) return Promise.reject(new Error("rpcd is gone"));
  const id = ++callSeq;
  return new Promise((resolve, reject) => {
    pendingCalls.set(id, { resolve, reject });
    send({ jsonrpc: "2.0", id, method, params: { ...params, during: during() } });
    if (signal) {
      const onAbort = () => send({ jsonrpc: "2.0", method: "cancel", params: { id } });
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    }
  });
}

function notify(method, params) {
  if (!daemonGone) send({ jsonrpc: "2.0", method, params });
}

const requestHandlers = new Map();
const notificationHandlers = new Map();

function errorObject(error) {
  const text = error instanceof Error ? error.message : String(error);
  const data = { type: error instanceof Error ? error.name : typeof error };
  if (error instanceof Error && typeof error.stack === "string") data.stack = error.stack;
  return { code: -32000, message: text, data };
}

async function handleRequest(message) {
  const handler = requestHandlers.get(message.method);
  if (handler === undefined) {
    send({ jsonrpc: "2.0", id: message.id, error: { code: -32601, message: `unknown method ${message.method}` } });
    return;
  }
  try {
    const result = await callContext.run({ call: message.params?.call }, () => handler(message.params ?? {}));
    send({ jsonrpc: "2.0", id: message.id, result: result === undefined ? null : result });
  } catch (error) {
    send({ jsonrpc: "2.0", id: message.id, error: errorObject(error) });
  }
}

function handle(message) {
  if (message.method === undefined) {
    const pending = pendingCalls.get(message.id);
    if (pending === undefined) return;
    pendingCalls.delete(message.id);
    if (message.error) pending.reject(new RemoteError(message.error));
    else pending.resolve(message.result);
    return;
  }
  if (message.id !== undefined && message.id !== null) {
    void handleRequest(message);
    return;
  }
  const handler = notificationHandlers.get(message.method);
  if (handler !== undefined) {
    try {
      handler(message.params ?? {});
    } catch (error) {
      console.error(`rpcd extension host: ${message.method} failed:`, error);
    }
  }
}

/**
 * The event loop's turn: what came, in order (never inside a synchronous call). After a request the
 * rest waits for the next turn, so what the request's code does before its first real await (the
 * microtasks of handlers that do not wait) comes first, as in Pi, where the next RPC command is a
 * later turn of the event loop.
 */
function pump() {
  if (syncStack.length > 0) return;
  pull();
  while (inbox.length > 0 && syncStack.length === 0) {
    const message = inbox.shift();
    if (message === null) {
      daemonGone = true;
      flush();
      realExit(0);
      return;
    }
    handle(message);
    if (message.method !== undefined && message.id !== undefined && message.id !== null) {
      if (inbox.length > 0) setImmediate(pump);
      return;
    }
  }
}

reader.on("message", pump);

/** What rpcd is told when extension code fails where nobody awaits it (a timer, a stray promise). */
function reportStray(error, kind) {
  const store = callContext.getStore();
  const message = error instanceof Error ? error.message : String(error);
  console.error(`rpcd extension host: ${kind}:`, error);
  notify("error", { runner: store?.runner, ext: store?.ext, event: kind, message });
}
process.on("uncaughtException", (error) => reportStray(error, "uncaught exception"));
process.on("unhandledRejection", (error) => reportStray(error, "unhandled rejection"));

// -- Pi's modules (core/extensions/loader.js getAliases), resolved from this host's node_modules -------

let aliases = null;
let createJiti = null;
let piVersion = null;

function piPackageDir() {
  return path.dirname(fileURLToPath(import.meta.resolve("@earendil-works/pi-coding-agent"))).replace(/[/\\]dist$/, "");
}

function getAliases() {
  if (aliases !== null) return aliases;
  const resolveImport = (specifier) => fileURLToPath(import.meta.resolve(specifier));
  const piCodingAgentEntry = path.join(piPackageDir(), "dist", "index.js");
  const piAgentCoreEntry = resolveImport("@earendil-works/pi-agent-core");
  const piTuiEntry = resolveImport("@earendil-works/pi-tui");
  const piAiCompatEntry = resolveImport("@earendil-works/pi-ai/compat");
  const piAiOauthEntry = resolveImport("@earendil-works/pi-ai/oauth");
  const piAiProvidersEntry = resolveImport("@earendil-works/pi-ai/providers/all");
  const typeboxEntry = require.resolve("typebox");
  const typeboxCompileEntry = require.resolve("typebox/compile");
  const typeboxValueEntry = require.resolve("typebox/value");
  aliases = {
    "@earendil-works/pi-coding-agent": piCodingAgentEntry,
    "@earendil-works/pi-agent-core": piAgentCoreEntry,
    "@earendil-works/pi-tui": piTuiEntry,
    "@earendil-works/pi-ai/providers/all": piAiProvidersEntry,
    "@earendil-works/pi-ai/compat": piAiCompatEntry,
    "@earendil-works/pi-ai/oauth": piAiOauthEntry,
    "@earendil-works/pi-ai": piAiCompatEntry,
    "@mariozechner/pi-coding-agent": piCodingAgentEntry,
    "@mariozechner/pi-agent-core": piAgentCoreEntry,
    "@mariozechner/pi-tui": piTuiEntry,
    "@mariozechner/pi-ai/providers/all": piAiProvidersEntry,
    "@mariozechner/pi-ai/compat": piAiCompatEntry,
    "@mariozechner/pi-ai/oauth": piAiOauthEntry,
    "@mariozechner/pi-ai": piAiCompatEntry,
    typebox: typeboxEntry,
    "typebox/compile": typeboxCompileEntry,
    "typebox/value": typeboxValueEntry,
    "@sinclair/typebox": typeboxEntry,
    "@sinclair/typebox/compile": typeboxCompileEntry,
    "@sinclair/typebox/value": typeboxValueEntry,
  };
  return aliases;
}

async function loadFactory(resolvedPath) {
  if (createJiti === null) ({ createJiti } = await import("jiti/static"));
  const jiti = createJiti(import.meta.url, { moduleCache: false, alias: getAliases() });
  const module = await jiti.import(resolvedPath, { default: true });
  return typeof module === "function" ? module : undefined;
}

// -- values -----------------------------------------------------------------------------------------

/** A value as it crosses to rpcd: what JSON.stringify makes of it (Pi writes its session file so). */
function wire(value) {
  if (value === undefined) return null;
  return JSON.parse(JSON.stringify(value, (_key, item) => (typeof item === "bigint" ? item.toString() : item)) ?? "null");
}

function message(error) {
  return error instanceof Error ? error.message : String(error);
}

// -- runners: one per session of the daemon ------------------------------------------------------------

const STALE_MESSAGE =
  "This extension ctx is stale after session replacement or reload. Do not use a captured pi or command ctx after ctx.newSession(), ctx.fork(), ctx.switchSession(), or ctx.reload(). For newSession, fork, and switchSession, move post-replacement work into withSession and use the ctx passed to withSession. For reload, do not use the old ctx after await ctx.reload().";

const runners = new Map();
const extensions = new Map();
let extensionSeq = 0;
let objectSeq = 0;
const callbacks = new Map();
const listeners = new Map();
const signals = new Map();

class Runner {
  constructor(id, cwd, agentDir, flags) {
    this.id = id;
    this.cwd = cwd;
    this.agentDir = agentDir;
    this.flagValues = new Map(Object.entries(flags ?? {}));
    this.staleMessage = undefined;
    this.extensions = [];
  }

  assertActive() {
    if (this.staleMessage) throw new Error(this.staleMessage);
  }
}

function runnerOf(id) {
  const runner = runners.get(id);
  if (runner === undefined) throw new Error(STALE_MESSAGE);
  return runner;
}

function callback(fn) {
  if (typeof fn !== "function") return null;
  const id = ++objectSeq;
  callbacks.set(id, fn);
  return id;
}

function abortSignal(id) {
  if (id === null || id === undefined) return undefined;
  let entry = signals.get(id);
  if (entry === undefined) {
    entry = new AbortController();
    signals.set(id, entry);
  }
  return entry.signal;
}

/** A signal of the extension's own (an AbortSignal): rpcd is told when it aborts. */
function ownSignal(signal) {
  if (!signal || typeof signal.addEventListener !== "function") return null;
  const id = ++objectSeq;
  const tell = () => notify("abort", { signal: id });
  if (signal.aborted) queueMicrotask(tell);
  else signal.addEventListener("abort", tell, { once: true });
  return { id, aborted: Boolean(signal.aborted) };
}

// -- the `pi` object (loader.js createExtensionAPI) ------------------------------------------------------

function createExtension(extensionPath, sourceInfo) {
  return {
    id: ++extensionSeq,
    path: extensionPath,
    sourceInfo,
    handlers: new Map(),
    handlerList: [],
    tools: new Map(),
    commands: new Map(),
    shortcuts: new Map(),
    flags: new Map(),
    renderers: [],
  };
}

function toolSpec(tool) {
  return {
    name: tool.name,
    label: tool.label,
    description: tool.description,
    parameters: wire(tool.parameters ?? { type: "object", properties: {} }),
    promptSnippet: tool.promptSnippet,
    promptGuidelines: tool.promptGuidelines,
    prepareArguments: typeof tool.prepareArguments === "function",
    executionMode: tool.executionMode,
  };
}

function commandSpec(name, options) {
  return {
    name,
    description: options?.description,
    argumentHint: options?.argumentHint,
    completions: typeof options?.getArgumentCompletions === "function",
  };
}

function createExtensionAPI(extension, runner) {
  const pendingFlagValues = new Map();
  const pendingChanges = [];
  const loadingUnsubscribers = [];
  const registered = { handlers: [], tools: [], commands: [], shortcuts: [], flags: [], renderers: [], providers: [],
    listeners: [] };
  let state = "loading";
  const assertActive = () => {
    if (state === "failed") {
      throw new Error(`Extension "${extension.path}" failed to load and its API is no longer active.`);
    }
    runner.assertActive();
  };
  const api = (name, args) => callSync("api", { runner: runner.id, ext: extension.id, name, args: wire(args) });
  /** A registration: collected while loading (sent with the load's answer), told at once afterwards. */
  const register = (kind, spec) => {
    if (state === "loading") registered[kind].push(spec);
    else api("register", [kind, spec]);
  };
  const providerChange = (change) => {
    if (state === "loading") pendingChanges.push(change);
    else change();
  };
  const pi = {
    on(event, handler) {
      assertActive();
      const list = extension.handlers.get(event) ?? [];
      list.push(handler);
      extension.handlers.set(event, list);
      extension.handlerList.push(handler);
      register("handlers", [event, extension.handlerList.length - 1]);
    },
    registerTool(tool) {
      assertActive();
      extension.tools.set(tool.name, tool);
      register("tools", toolSpec(tool));
    },
    registerCommand(name, options) {
      assertActive();
      extension.commands.set(name, { name, ...options });
      register("commands", commandSpec(name, options));
    },
    registerShortcut(shortcut, options) {
      assertActive();
      extension.shortcuts.set(shortcut, { shortcut, ...options });
      register("shortcuts", { shortcut, description: options?.description });
    },
    registerFlag(name, options) {
      assertActive();
      if (options.default !== undefined && typeof options.default !== options.type) {
        throw new Error(`Invalid default for flag "${name}": expected ${options.type}, got ${typeof options.default}`);
      }
      extension.flags.set(name, { name, ...options });
      if (options.default !== undefined && !runner.flagValues.has(name) && state === "loading") {
        if (!pendingFlagValues.has(name)) pendingFlagValues.set(name, options.default);
      }
      register("flags", { name, type: options.type, default: options.default, description: options.description });
    },
    registerMessageRenderer(customType, _renderer) {
      assertActive();
      register("renderers", `message:${customType}`);
    },
    registerMarkdownTransformer(_transformer) {
      assertActive();
      register("renderers", "markdown");
    },
    registerEntryRenderer(customType, _renderer) {
      assertActive();
      register("renderers", `entry:${customType}`);
    },
    getFlag(name) {
      assertActive();
      if (!extension.flags.has(name)) return undefined;
      if (state === "loading") {
        return runner.flagValues.has(name) ? runner.flagValues.get(name) : pendingFlagValues.get(name);
      }
      return api("getFlag", [name]) ?? undefined;
    },
    sendMessage(message, options) {
      assertActive();
      api("sendMessage", [message, options ?? {}]);
    },
    sendUserMessage(content, options) {
      assertActive();
      api("sendUserMessage", [content, options ?? {}]);
    },
    appendEntry(customType, data) {
      assertActive();
      api("appendEntry", [customType, data]);
    },
    setSessionName(name) {
      assertActive();
      api("setSessionName", [name]);
    },
    getSessionName() {
      assertActive();
      return api("getSessionName", []) ?? undefined;
    },
    setLabel(entryId, label) {
      assertActive();
      api("setLabel", [entryId, label]);
    },
    exec(command, args, options) {
      assertActive();
      const { signal, ...rest } = options ?? {};
      return callAsync("api", {
        runner: runner.id, ext: extension.id, name: "exec",
        args: wire([command, args ?? [], { ...rest, signal: ownSignal(signal) }]),
      });
    },
    getActiveTools() {
      assertActive();
      return api("getActiveTools", []);
    },
    getAllTools() {
      assertActive();
      return api("getAllTools", []);
    },
    setActiveTools(toolNames) {
      assertActive();
      api("setActiveTools", [toolNames]);
    },
    getCommands() {
      assertActive();
      return api("getCommands", []);
    },
    setModel(model) {
      assertActive();
      return callAsync("api", { runner: runner.id, ext: extension.id, name: "setModel", args: wire([model]) });
    },
    getThinkingLevel() {
      assertActive();
      return api("getThinkingLevel", []);
    },
    setThinkingLevel(level) {
      assertActive();
      api("setThinkingLevel", [level]);
    },
    registerProvider(providerOrName, config) {
      assertActive();
      let name = providerOrName;
      let spec = config;
      if (typeof providerOrName !== "string") {
        // a native provider (pi-ai's Provider): its id, models and stream functions
        const provider = providerOrName ?? {};
        name = provider.id;
        spec = { ...provider, name: provider.name };
        delete spec.id;
      } else if (!config) {
        throw new Error("Provider config is required when registering by name");
      }
      const streams = {};
      for (const key of ["streamSimple", "stream"]) {
        if (typeof spec[key] === "function") streams[key] = spec[key];
      }
      const description = wire({ ...spec, streamSimple: undefined, stream: undefined, oauth: undefined });
      const stream = streams.streamSimple ?? (streams.stream ? (model, context, options) => streams.stream(model, context, options) : null);
      const entry = { name, config: description, stream: stream ? callback(stream) : null };
      providerChange(() => {
        if (state === "loading") registered.providers.push(["register", entry]);
        else api("registerProvider", [entry]);
      });
    },
    unregisterProvider(name) {
      assertActive();
      providerChange(() => {
        if (state === "loading") registered.providers.push(["unregister", name]);
        else api("unregisterProvider", [name]);
      });
    },
    events: {
      emit(channelName, data) {
        assertActive();
        const ids = api("emit", [channelName, data]) ?? [];
        for (const id of ids) deliver(id, data);
      },
      on(channelName, handler) {
        assertActive();
        const id = ++objectSeq;
        listeners.set(id, { handler, runner: runner.id, ext: extension.id, channel: channelName });
        const subscription = [channelName, id];
        if (state === "loading") registered.listeners.push(subscription);
        else api("on", subscription);
        let active = true;
        const unsubscribe = () => {
          if (!active) return;
          active = false;
          listeners.delete(id);
          const index = registered.listeners.indexOf(subscription);
          if (index !== -1) registered.listeners.splice(index, 1);
          else notify("off", { runner: runner.id, listener: id });
        };
        if (state === "loading") loadingUnsubscribers.push(unsubscribe);
        return unsubscribe;
      },
    },
  };
  return {
    pi,
    registered,
    commit() {
      if (state !== "loading") return;
      runner.assertActive();
      for (const [name, value] of pendingFlagValues) {
        if (!runner.flagValues.has(name)) runner.flagValues.set(name, value);
      }
      for (const apply of pendingChanges) apply();
      state = "active";
    },
    discard() {
      if (state !== "loading") return;
      state = "failed";
      for (const unsubscribe of loadingUnsubscribers) unsubscribe();
    },
  };
}

/** `pi.events` listeners run as Pi's bus runs them: awaited one by one in the background, a failure logged. */
function deliver(id, data) {
  const listener = listeners.get(id);
  if (listener === undefined) return;
  const copy = data === undefined ? undefined : structuredClone(data);
  callContext.run({ runner: listener.runner, ext: extension(listener.ext)?.path }, () => {
    Promise.resolve()
      .then(() => listener.handler(copy))
      .catch((error) => console.error(`Event handler error (${listener.channel}):`, error));
  });
}

function extension(id) {
  return extensions.get(id);
}

// -- ctx (runner.js createContext / createCommandContext, rpc-mode.js's UI context) -----------------------

const PLAIN_THEME = new Proxy({}, {
  get(_target, property) {
    if (property === "name") return "rpc";
    if (typeof property === "symbol") return undefined;
    return (...args) => {
      const text = [...args].reverse().find((a) => typeof a === "string");
      return text ?? "";
    };
  },
});

function createContext(ref) {
  // a replacement's ctx (withSession) may belong to a session without extensions of this host
  const runner = ref.kind === "replaced" ? (runners.get(ref.runner) ?? new Runner(ref.runner, ref.cwd, "", {}))
    : runnerOf(ref.runner);
  const call = (name, ...args) => {
    runner.assertActive();
    return callSync("ctx", { ctx: ref, name, args: wire(args) });
  };
  const callLater = (name, args, signal) => {
    runner.assertActive();
    return callAsync("ctx", { ctx: ref, name, args: wire(args) }, signal);
  };
  const dialog = (name, args, opts, fallback) => {
    if (opts?.signal?.aborted) return Promise.resolve(fallback);
    const options = opts?.timeout !== undefined ? { timeout: opts.timeout } : {};
    const pending = callLater(name, [...args, options], opts?.signal);
    if (!opts?.signal) return pending.then((value) => value ?? fallback);
    return new Promise((resolve, reject) => {
      opts.signal.addEventListener("abort", () => resolve(fallback), { once: true });
      pending.then((value) => resolve(value ?? fallback), reject);
    });
  };
  const ui = {
    ...TERMINAL_ONLY,
    select: (title, options, opts) => dialog("ui.select", [title, options], opts, undefined),
    confirm: (title, messageText, opts) => dialog("ui.confirm", [title, messageText], opts, false),
    input: (title, placeholder, opts) => dialog("ui.input", [title, placeholder], opts, undefined),
    editor: (title, prefill) => callLater("ui.editor", [title, prefill]).then((value) => value ?? undefined),
    notify: (text, type) => { call("ui.notify", text, type); },
    setStatus: (key, text) => { call("ui.setStatus", key, text); },
    setWidget: (key, content, options) => {
      if (content === undefined || Array.isArray(content)) call("ui.setWidget", key, content, options?.placement);
    },
    setTitle: (title) => { call("ui.setTitle", title); },
    custom: () => callLater("ui.custom", []).then(() => undefined),
    pasteToEditor: (text) => { call("ui.setEditorText", text); },
    setEditorText: (text) => { call("ui.setEditorText", text); },
    setTheme: () => ({ success: false, error: "Theme switching not supported in RPC mode" }),
  };
  const sessionManager = {};
  for (const name of ["getCwd", "getSessionDir", "getSessionId", "getSessionFile", "getLeafId", "getLeafEntry",
    "getEntry", "getLabel", "getBranch", "buildContextEntries", "getHeader", "getEntries", "getTree",
    "getSessionName"]) {
    sessionManager[name] = (...args) => call(`sm.${name}`, ...args) ?? undefined;
  }
  const modelRegistry = {
    getAll: () => call("models.getAll"),
    getAvailable: () => call("models.getAvailable"),
    find: (provider, modelId) => call("models.find", provider, modelId) ?? undefined,
  };
  const ctx = {
    get ui() { runner.assertActive(); return ref.hasUI ? ui : NO_UI; },
    get mode() { runner.assertActive(); return ref.mode; },
    get hasUI() { runner.assertActive(); return ref.hasUI; },
    get cwd() { runner.assertActive(); return runner.cwd; },
    get sessionManager() { runner.assertActive(); return sessionManager; },
    get modelRegistry() { runner.assertActive(); return modelRegistry; },
    get model() { return call("model") ?? undefined; },
    get scopedModels() { return call("scopedModels"); },
    get thinkingLevel() { return call("thinkingLevel") ?? undefined; },
    isIdle: () => call("isIdle"),
    isProjectTrusted: () => call("isProjectTrusted"),
    get signal() {
      const id = call("signal");
      return abortSignal(id);
    },
    abort: () => { call("abort"); },
    hasPendingMessages: () => call("hasPendingMessages"),
    shutdown: () => { call("shutdown"); },
    getContextUsage: () => call("getContextUsage") ?? undefined,
    compact: (options) => {
      call("compact", { customInstructions: options?.customInstructions, onComplete: callback(options?.onComplete),
        onError: callback(options?.onError) });
    },
    getSystemPrompt: () => call("getSystemPrompt"),
  };
  if (ref.kind === "command" || ref.kind === "replaced") {
    ctx.getSystemPromptOptions = () => call("getSystemPromptOptions");
    ctx.waitForIdle = () => callLater("waitForIdle", []).then(() => undefined);
    ctx.newSession = (options) => callLater("newSession", [{ parentSession: options?.parentSession,
      setup: callback(options?.setup), withSession: callback(options?.withSession) }]);
    ctx.fork = (entryId, options) => callLater("fork", [entryId, { position: options?.position,
      withSession: callback(options?.withSession) }]);
    ctx.navigateTree = (targetId, options) => callLater("navigateTree", [targetId, options ?? {}]);
    ctx.switchSession = (sessionPath, options) => callLater("switchSession", [sessionPath,
      { withSession: callback(options?.withSession) }]);
    ctx.reload = () => callLater("reload", []).then(() => undefined);
  }
  if (ref.kind === "replaced") {
    ctx.sendMessage = (messageValue, options) => callLater("sendMessage", [messageValue, options ?? {}]).then(() => undefined);
    ctx.sendUserMessage = (content, options) => callLater("sendUserMessage", [content, options ?? {}]).then(() => undefined);
  }
  return ctx;
}

/** What draws in Pi's terminal: in RPC mode (rpc-mode.js's UI context) no-ops and empty answers. */
const TERMINAL_ONLY = {
  onTerminalInput: () => () => {},
  setWorkingMessage: () => {},
  setWorkingVisible: () => {},
  setWorkingIndicator: () => {},
  setHiddenThinkingLabel: () => {},
  setFooter: () => {},
  setHeader: () => {},
  getEditorText: () => "",
  addAutocompleteProvider: () => {},
  setEditorComponent: () => {},
  getEditorComponent: () => undefined,
  theme: PLAIN_THEME,
  getAllThemes: () => [],
  getTheme: () => undefined,
  getToolsExpanded: () => false,
  setToolsExpanded: () => {},
};

/** A context without UI (Pi's noOpUIContext): every dialog answers its default. */
const NO_UI = {
  ...TERMINAL_ONLY,
  select: async () => undefined,
  confirm: async () => false,
  input: async () => undefined,
  editor: async () => undefined,
  custom: async () => undefined,
  notify: () => {},
  setStatus: () => {},
  setWidget: () => {},
  setTitle: () => {},
  pasteToEditor: () => {},
  setEditorText: () => {},
  setTheme: () => ({ success: false, error: "UI not available" }),
};

/** A session writer handed to `newSession({setup})` (Pi's SessionManager appends, and its reads). */
function createWriter(ref) {
  const call = (name, ...args) => callSync("ctx", { ctx: ref, name: `writer.${name}`, args: wire(args) });
  const writer = {};
  for (const name of ["appendMessage", "appendCustomEntry", "appendCustomMessageEntry", "appendLabelChange",
    "appendSessionInfo", "getCwd", "getSessionDir", "getSessionId", "getSessionFile", "getLeafId", "getLeafEntry",
    "getEntry", "getLabel", "getBranch", "buildContextEntries", "getHeader", "getEntries", "getTree",
    "getSessionName"]) {
    writer[name] = (...args) => call(name, ...args) ?? undefined;
  }
  return writer;
}

// -- what rpcd asks -------------------------------------------------------------------------------------

requestHandlers.set("initialize", () => {
  const manifest = JSON.parse(readFileSync(path.join(piPackageDir(), "package.json"), "utf8"));
  piVersion = manifest.version;
  return { protocol: PROTOCOL_VERSION, node: process.version, pi: piVersion, pid: process.pid };
});

requestHandlers.set("ping", () => true);

// -- Pi packages (core/package-manager.js, as `pi install|remove|list` and Pi's resource loader run it) ------

let packageModules = null;

/** Pi's package manager for `cwd`, reading its settings files as Pi does (the project's only when trusted). */
async function packageManager({ cwd, agentDir, projectTrusted }) {
  if (packageModules === null) {
    const dist = path.join(piPackageDir(), "dist", "core");
    const load = (name) => import(new URL(`file://${path.join(dist, name)}`).href);
    const [manager, settings, guard] = await Promise.all([load("package-manager.js"), load("settings-manager.js"),
      load("output-guard.js")]);
    guard.takeOverStdout(); // npm and git run with stdout on stderr: the host's stdout is the protocol's
    packageModules = { DefaultPackageManager: manager.DefaultPackageManager, SettingsManager: settings.SettingsManager };
  }
  const settingsManager = packageModules.SettingsManager.create(cwd, agentDir, { projectTrusted: Boolean(projectTrusted) });
  const manager = new packageModules.DefaultPackageManager({ cwd, agentDir, settingsManager });
  const progress = [];
  manager.setProgressCallback((event) => {
    if (event.type === "start" && event.message) progress.push(event.message);
  });
  return { manager, settingsManager, progress };
}

function resolvedOfPackages(list) {
  return list.filter((entry) => entry.metadata?.origin === "package")
    .map((entry) => ({ path: entry.path, enabled: entry.enabled !== false, metadata: entry.metadata }));
}

// What a session's packages bring (Pi's resolve(): a configured package not installed yet is installed first).
requestHandlers.set("packages.resolve", async (params) => {
  const { manager, progress } = await packageManager(params);
  const resolved = await manager.resolve();
  return { extensions: resolvedOfPackages(resolved.extensions), skills: resolvedOfPackages(resolved.skills),
    prompts: resolvedOfPackages(resolved.prompts), installed: progress };
});

requestHandlers.set("packages.list", async (params) => {
  const { manager } = await packageManager(params);
  return { packages: manager.listConfiguredPackages().map((pkg) => ({ source: pkg.source, scope: pkg.scope,
    filtered: Boolean(pkg.filtered), installedPath: pkg.installedPath ?? null })) };
});

requestHandlers.set("packages.install", async (params) => {
  const { manager, settingsManager } = await packageManager(params);
  await manager.installAndPersist(params.source, { local: Boolean(params.local) });
  await settingsManager.flush?.();
  return { installed: params.source };
});

requestHandlers.set("packages.remove", async (params) => {
  const { manager, settingsManager } = await packageManager(params);
  const removed = await manager.removeAndPersist(params.source, { local: Boolean(params.local) });
  await settingsManager.flush?.();
  return { removed: Boolean(removed) };
});

requestHandlers.set("load", async (params) => {
  const runner = new Runner(params.runner, params.cwd, params.agentDir, params.flags);
  runners.set(runner.id, runner);
  const loaded = [];
  for (const { path: extensionPath, sourceInfo } of params.extensions) {
    const resolvedPath = path.resolve(params.cwd, extensionPath);
    const extensionRecord = createExtension(extensionPath, sourceInfo);
    const load = createExtensionAPI(extensionRecord, runner);
    try {
      const factory = await callContext.run({ runner: runner.id, ext: extensionPath }, () => loadFactory(resolvedPath));
      if (!factory) {
        loaded.push({ path: extensionPath, error: `Extension does not export a valid factory function: ${extensionPath}` });
        continue;
      }
      await callContext.run({ runner: runner.id, ext: extensionPath }, () => factory(load.pi));
      load.commit();
    } catch (error) {
      load.discard();
      loaded.push({ path: extensionPath, error: `Failed to load extension: ${message(error)}` });
      continue;
    }
    extensions.set(extensionRecord.id, extensionRecord);
    runner.extensions.push(extensionRecord);
    loaded.push({ path: extensionPath, id: extensionRecord.id, registered: load.registered });
  }
  return { extensions: loaded };
});

notificationHandlers.set("invalidate", ({ runner, message: text }) => {
  const found = runners.get(runner);
  if (found === undefined) return;
  found.staleMessage = text || STALE_MESSAGE;
  runners.delete(runner);
  for (const record of found.extensions) extensions.delete(record.id);
  for (const [id, listener] of listeners) if (listener.runner === runner) listeners.delete(id);
});

notificationHandlers.set("abort", ({ signal }) => {
  const controller = signals.get(signal);
  if (controller === undefined) {
    const fresh = new AbortController();
    fresh.abort();
    signals.set(signal, fresh);
    return;
  }
  controller.abort();
});

notificationHandlers.set("forget", ({ signals: ids, callbacks: done }) => {
  for (const id of ids ?? []) signals.delete(id);
  for (const id of done ?? []) callbacks.delete(id);
});

notificationHandlers.set("deliver", ({ listener, data }) => deliver(listener, data));

function extensionFor(params) {
  const record = extensions.get(params.ext);
  if (record === undefined) throw new Error(STALE_MESSAGE);
  return record;
}

const WRITTEN_BACK = { tool_call: "input", before_provider_headers: "headers", context: "messages",
  before_provider_request: "payload" };

requestHandlers.set("invoke", async (params) => {
  const record = extensionFor(params);
  const handler = record.handlerList[params.handler];
  const ctx = createContext(params.ctx);
  const event = params.event;
  const key = WRITTEN_BACK[event.type];
  const before = key ? JSON.stringify(event[key]) : undefined;
  const result = await callContext.run({ call: params.call, runner: params.ctx.runner, ext: record.path },
    () => handler(event, ctx));
  const out = { result: wire(result) };
  if (key) {
    const after = JSON.stringify(event[key]);
    if (after !== before) out.changed = { [key]: after === undefined ? null : JSON.parse(after) };
  }
  return out;
});

// The handlers of one event that only notifies (their values unused), run as Pi's emit runs them: one
// after the other, each awaited, a failure reported and the next run (batched: one round trip).
requestHandlers.set("invokeAll", async (params) => {
  const ctx = createContext(params.ctx);
  const event = params.event;
  const errors = [];
  for (const [ext, index] of params.handlers) {
    const record = extensions.get(ext);
    if (record === undefined) {
      errors.push(STALE_MESSAGE);
      continue;
    }
    try {
      await callContext.run({ call: params.call, runner: params.ctx.runner, ext: record.path },
        () => record.handlerList[index](event, ctx));
      errors.push(null);
    } catch (error) {
      errors.push(message(error));
    }
  }
  return { errors };
});

requestHandlers.set("tool", async (params) => {
  const record = extensionFor(params);
  const tool = record.tools.get(params.name);
  if (tool === undefined) throw new Error(`Tool ${params.name} not found`);
  const ctx = createContext(params.ctx);
  const signal = abortSignal(params.signal) ?? new AbortController().signal;
  const onUpdate = (partial) => notify("update", { updates: params.updates, partial: wire(partial) });
  const result = await callContext.run({ call: params.call, runner: params.ctx.runner, ext: record.path },
    () => tool.execute(params.toolCallId, params.params, signal, onUpdate, ctx));
  return wire(result);
});

requestHandlers.set("prepare", async (params) => {
  const record = extensionFor(params);
  const tool = record.tools.get(params.name);
  if (tool === undefined || typeof tool.prepareArguments !== "function") return params.args;
  return wire(await tool.prepareArguments(params.args));
});

requestHandlers.set("command", async (params) => {
  const record = extensionFor(params);
  const command = record.commands.get(params.name);
  if (command === undefined) throw new Error(`Command ${params.name} not found`);
  const ctx = createContext(params.ctx);
  await callContext.run({ call: params.call, runner: params.ctx.runner, ext: record.path },
    () => command.handler(params.args, ctx));
  return null;
});

requestHandlers.set("complete", async (params) => {
  const record = extensionFor(params);
  const command = record.commands.get(params.name);
  if (command === undefined || typeof command.getArgumentCompletions !== "function") return null;
  return wire(await command.getArgumentCompletions(params.prefix));
});

requestHandlers.set("callback", async (params) => {
  const fn = callbacks.get(params.callback);
  if (fn === undefined) throw new Error("this callback is no longer available (its session was replaced)");
  let argument = params.value;
  if (params.ctx) argument = createContext(params.ctx);
  else if (params.writer) argument = createWriter(params.writer);
  else if (params.error !== undefined) argument = new Error(params.error);
  return wire(await callContext.run({ call: params.call, runner: params.runner }, () => fn(argument)));
});

requestHandlers.set("stream", async (params) => {
  const fn = callbacks.get(params.stream);
  if (fn === undefined) throw new Error("this provider is no longer registered");
  const signal = abortSignal(params.signal) ?? new AbortController().signal;
  const produced = await fn(params.model, params.context, { ...params.options, signal });
  for await (const event of produced) {
    const value = wire(event);
    notify("streamed", { stream: params.events, event: value });
    if (value?.type === "done" || value?.type === "error") break;
  }
  return null;
});

