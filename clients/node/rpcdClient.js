'use strict';
/**
 * Editor-side rpcd client: spawns the daemon and talks to it with vscode-jsonrpc, the
 * library VS Code extensions already use. vscode-jsonrpc writes LSP Content-Length
 * frames; the daemon auto-detects that framing from the first bytes and answers in kind.
 *
 *   import { spawnDaemon } from 'rpcd-client';          // ESM (index.mjs); require() works too
 *   const client = await spawnDaemon({ args: ['--in-memory'] });
 *   client.onSessionEvent((params) => ...);   // stale generations already dropped
 *   const reply = await client.prompt('hello');          // { text, stopReason, isError, usage, ... }
 *   await client.close();
 *
 * A daemon that cannot start, or exits before (or while) answering, rejects at once with a
 * DaemonExitedError carrying its exit status and the last lines of its stderr; a pipe it closed
 * never becomes an uncaught EPIPE. `request(method, params)` is typed from the OpenRPC document
 * (methods.d.ts, generated).
 */
const { spawn } = require('node:child_process');
const path = require('node:path');
const rpc = require('vscode-jsonrpc/node');

const PROTOCOL_VERSION = 1;
const STDERR_LINES = 200;
const USAGE_KEYS = ['input', 'output', 'cacheRead', 'cacheWrite', 'totalTokens'];

/** The daemon could not be started, or exited while the client still needed it. */
class DaemonExitedError extends Error {
  constructor(message, { exitCode = null, signal = null, stderrTail = [], cause } = {}) {
    const tail = stderrTail.length ? `\nlast lines of the daemon's stderr:\n  ${stderrTail.join('\n  ')}` : '';
    super(message + tail, cause ? { cause } : undefined);
    this.name = 'DaemonExitedError';
    this.exitCode = exitCode;
    this.signal = signal;
    this.stderrTail = stderrTail;
  }
}

class RpcdClient {
  constructor(child, connection) {
    this.child = child;
    this.connection = connection;
    this.generation = 0;
    this.sessionId = undefined;
    this.server = undefined;
    this.stderrLines = [];
    this.exit = undefined;
    this._listeners = new Set();
    this._turns = new Set();
    // 'close': the process exited and its stdio is drained, so the stderr tail is complete.
    this._exited = new Promise((resolve) => child.once('close', (code, signal) => {
      this.exit = { code, signal };
      resolve(this.exit);
    }));

    // A daemon that is gone makes writes to its stdin fail (EPIPE) and its streams error: those
    // are reported through the pending requests (DaemonExitedError), never thrown uncaught.
    for (const stream of [child.stdin, child.stdout, child.stderr]) stream?.on('error', () => {});
    connection.onError(() => {});

    // Always drain stderr (an unread pipe deadlocks the daemon); keep a bounded tail for reports.
    let partial = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop();
      for (const line of lines) this._stderrLine(line);
    });
    child.stderr.on('end', () => {
      if (partial) this._stderrLine(partial);
      partial = '';
    });

    for (const method of ['session/event', 'session/lifecycle']) {
      connection.onNotification(method, (params) => this._sessionNotification(method, params));
    }
  }

  _stderrLine(line) {
    this.stderrLines.push(line);
    if (this.stderrLines.length > STDERR_LINES) this.stderrLines.shift();
  }

  _sessionNotification(method, params) {
    if (typeof params?.generation === 'number') {
      if (params.generation < this.generation) return; // a replaced session: stale, dropped
      if (params.generation > this.generation) {
        this.generation = params.generation;
        this.sessionId = params.sessionId;
      }
    }
    for (const turn of this._turns) turn.feed(method, params);
    for (const listener of this._listeners) listener(params, method);
  }

  /** Listen to session/event and session/lifecycle of the current generation. Returns an unsubscribe. */
  onSessionEvent(listener) {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  }

  async _died(method) {
    const { code, signal } = await this._exited;
    const status = signal ? `signal ${signal}` : `exit status ${code}`;
    throw new DaemonExitedError(`the daemon exited (${status}) before answering ${method}`,
      { exitCode: code, signal, stderrTail: this.stderrLines.slice(-20) });
  }

  /** Any request; rejects with a ResponseError ({code, message, data: {errors: [...]}}), on timeout,
   *  or with a DaemonExitedError when the daemon exits first. */
  async request(method, params, { timeoutMs = 60000 } = {}) {
    if (this.exit) return this._died(method);
    const source = new rpc.CancellationTokenSource();
    let timer;
    const timeout = new Promise((_, reject) => {
      if (timeoutMs === null || timeoutMs === Infinity) return;
      timer = setTimeout(() => {
        source.cancel(); // vscode-jsonrpc sends $/cancelRequest
        reject(new Error(`no answer to ${method} within ${timeoutMs} ms`));
      }, timeoutMs);
    });
    const sent = params === undefined
      ? this.connection.sendRequest(method, source.token)
      : this.connection.sendRequest(method, params, source.token);
    sent.catch(() => {}); // settled by the race below; a later rejection is not "unhandled"
    try {
      const result = await Promise.race([sent, timeout, this._died(method)]);
      if (result && typeof result.generation === 'number' && result.cancelled === false) {
        if (result.generation >= this.generation) {
          this.generation = result.generation;
          this.sessionId = result.sessionId;
        }
      }
      return result;
    } finally {
      clearTimeout(timer);
      source.dispose();
    }
  }

  /**
   * Run one turn (no timeout by default: turns run long). Resolves with the daemon's answer plus
   * what the turn's events said (as the Python library's prompt() does): text (the last assistant
   * message's), sessionId, sessionFile (once written), usage, cost, isError and errorMessage.
   */
  async prompt(text, { images, streamingBehavior, timeoutMs = null } = {}) {
    const params = { text };
    if (images?.length) params.images = images;
    if (streamingBehavior) params.streamingBehavior = streamingBehavior;
    const turn = new TurnRecorder();
    this._turns.add(turn);
    let answer;
    try {
      answer = await this.request('prompt', params, { timeoutMs });
    } finally {
      this._turns.delete(turn);
    }
    if (!answer || answer.stopReason === undefined) return answer;
    const result = turn.outcome(answer);
    try {
      const state = await this.request('getState', {});
      if (state.sessionFile && state.sessionId === (result.sessionId ?? state.sessionId)) {
        result.sessionFile = state.sessionFile;
        result.sessionId = state.sessionId;
      }
    } catch {
      /* the file is a courtesy: the turn's answer stands */
    }
    return result;
  }

  async initialize({ handlers = {}, timeoutMs = 60000 } = {}) {
    const capabilities = { progress: {} };
    if (handlers['host/authorizeProject']) capabilities.authorizeProject = {};
    if (handlers['tool/authorize']) capabilities.toolApproval = {};
    if (Object.keys(handlers).some((m) => m.startsWith('ui/'))) capabilities.extensionUi = {};
    for (const [method, handler] of Object.entries(handlers)) {
      this.connection.onRequest(method, handler);
    }
    this.server = await this.request('initialize', {
      protocolVersion: PROTOCOL_VERSION,
      clientInfo: { name: 'rpcd-node-client', version: '0.1.0' },
      capabilities,
    }, { timeoutMs });
    return this.server;
  }

  /** shutdown + exit, end stdin, wait graceMs, then SIGTERM, then SIGKILL. Resolves with the exit info. */
  async close({ graceMs = 3000 } = {}) {
    if (!this.exit && this.child.exitCode === null && this.child.signalCode === null) {
      try {
        await this.request('shutdown', undefined, { timeoutMs: graceMs });
        await this.connection.sendNotification('exit');
      } catch {
        /* the daemon may already be gone; stopping it below is what matters */
      }
    }
    this.connection.dispose();
    this.child.stdin.end();
    const wait = (ms) => new Promise((resolve) => setTimeout(() => resolve(undefined), ms));
    for (const signal of [null, 'SIGTERM', 'SIGKILL']) {
      if (signal) this.child.kill(signal);
      const done = await Promise.race([this._exited, wait(graceMs)]);
      if (done) return done;
    }
    return this._exited;
  }
}

/** The assistant messages ended while one prompt runs (the daemon sends them before its answer). */
class TurnRecorder {
  constructor() {
    this.sessionId = undefined;
    this.last = undefined;
    this.usage = Object.fromEntries(USAGE_KEYS.map((k) => [k, 0]));
    this.cost = 0;
  }

  feed(method, params) {
    const event = params?.event;
    if (method !== 'session/event' || event?.type !== 'message_end' || event.message?.role !== 'assistant') return;
    this.sessionId = params.sessionId ?? this.sessionId;
    this.last = event.message;
    const usage = event.message.usage ?? {};
    for (const key of USAGE_KEYS) if (typeof usage[key] === 'number') this.usage[key] += usage[key];
    if (typeof usage.cost?.total === 'number') this.cost += usage.cost.total;
  }

  outcome(answer) {
    const out = { ...answer };
    const content = this.last?.content;
    out.text = typeof content === 'string' ? content
      : (content ?? []).filter((part) => part?.type === 'text').map((part) => part.text ?? '').join('');
    if (this.sessionId) out.sessionId = this.sessionId;
    out.usage = { ...this.usage };
    out.cost = Math.round(this.cost * 1e10) / 1e10;
    out.isError = answer.stopReason === 'error' || answer.stopReason === 'aborted';
    if (out.isError) {
      out.errorMessage = this.last?.errorMessage
        || (answer.stopReason === 'aborted' ? 'the turn was aborted' : 'the turn failed (no reason given)');
    }
    return out;
  }
}

/**
 * The daemon's default argv: `python3 -P -m rpcd`. `-P` keeps the project directory (the cwd the
 * daemon starts in) off Python's sys.path, so a repository's `json/`, `typing.py`, `rpcd/` ... never
 * run inside the daemon (the `rpcd` console script is safe as well).
 */
const DEFAULT_COMMAND = Object.freeze(['python3', '-P', '-m', 'rpcd']);

/** `env` without empty or relative PYTHONPATH entries: Python resolves them against the cwd (the project). */
function withoutRelativePythonPath(env) {
  const out = { ...env };
  if (out.PYTHONPATH === undefined) return out;
  const kept = String(out.PYTHONPATH).split(path.delimiter).filter((entry) => path.isAbsolute(entry));
  if (kept.length) out.PYTHONPATH = kept.join(path.delimiter);
  else delete out.PYTHONPATH;
  return out;
}

/** The daemon's stdin as vscode-jsonrpc writes to it, except that a write it cannot take (EPIPE, a
 *  destroyed stream: the daemon is gone) never rejects. vscode-jsonrpc 8 rethrows a failed request
 *  write from inside a promise executor, an unhandled rejection nobody can catch; the request's own
 *  answer is then the daemon's exit (DaemonExitedError, from `request`) or its timeout. */
function forgivingWritable(stream) {
  const writable = rpc.RAL().stream.asWritableStream(stream);
  const write = writable.write.bind(writable);
  writable.write = (data, encoding) => write(data, encoding).catch(() => {});
  return writable;
}

/**
 * Spawn the daemon (default: `python3 -P -m rpcd`) and initialize it.
 * Options: command (argv array), args, cwd, env, handlers ({'host/authorizeProject': fn, 'ui/confirm': fn, ...}),
 * startTimeoutMs (default 30000). Rejects with a DaemonExitedError when the command cannot be started
 * or the daemon exits before answering initialize (its exit status and stderr tail in the message).
 */
async function spawnDaemon({ command = DEFAULT_COMMAND, args = [], cwd, env, handlers = {},
  startTimeoutMs = 30000 } = {}) {
  const [file, ...rest] = command;
  const child = spawn(file, [...rest, ...args], {
    cwd, env: withoutRelativePythonPath(env ?? process.env), stdio: ['pipe', 'pipe', 'pipe'],
  });
  try {
    await new Promise((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
  } catch (error) {
    throw new DaemonExitedError(`cannot start the daemon (${[file, ...rest].join(' ')}): ${error.message}`,
      { cause: error });
  }
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(child.stdout),
    new rpc.WriteableStreamMessageWriter(forgivingWritable(child.stdin)),
  );
  connection.listen();
  const client = new RpcdClient(child, connection);
  try {
    await client.initialize({ handlers, timeoutMs: startTimeoutMs });
  } catch (error) {
    await client.close({ graceMs: 1000 });
    if (!(error instanceof DaemonExitedError)) error.stderrTail = client.stderrLines.slice(-20);
    throw error;
  }
  return client;
}

/** The daemon command from RPCD_DAEMON_CMD (a JSON array or a space-separated string). */
function daemonCommandFromEnv(fallback = DEFAULT_COMMAND) {
  const raw = process.env.RPCD_DAEMON_CMD;
  if (!raw) return fallback;
  return raw.trim().startsWith('[') ? JSON.parse(raw) : raw.trim().split(/\s+/);
}

module.exports = {
  RpcdClient, DaemonExitedError, spawnDaemon, daemonCommandFromEnv, withoutRelativePythonPath, DEFAULT_COMMAND,
  PROTOCOL_VERSION,
};
