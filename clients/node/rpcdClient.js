'use strict';
/**
 * Editor-side rpcd client: spawns the daemon and talks to it with vscode-jsonrpc, the
 * library VS Code extensions already use. vscode-jsonrpc writes LSP Content-Length
 * frames; the daemon auto-detects that framing from the first bytes and answers in kind.
 *
 *   const { spawnDaemon } = require('rpcd-client');   // or require('./rpcdClient') in this folder
 *   const client = await spawnDaemon({ command: ['python3', '-P', '-m', 'rpcd'], args: ['--in-memory'] });
 *   client.onSessionEvent((params) => ...);   // stale generations already dropped
 *   await client.request('newSession', {});
 *   await client.close();
 */
const { spawn } = require('node:child_process');
const path = require('node:path');
const rpc = require('vscode-jsonrpc/node');

const PROTOCOL_VERSION = 1;
const STDERR_LINES = 200;

class RpcdClient {
  constructor(child, connection) {
    this.child = child;
    this.connection = connection;
    this.generation = 0;
    this.sessionId = undefined;
    this.server = undefined;
    this.stderrLines = [];
    this._listeners = new Set();
    this._exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));

    // Always drain stderr (an unread pipe deadlocks the daemon); keep a bounded tail for reports.
    let partial = '';
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => {
      const lines = (partial + chunk).split('\n');
      partial = lines.pop();
      for (const line of lines) {
        this.stderrLines.push(line);
        if (this.stderrLines.length > STDERR_LINES) this.stderrLines.shift();
      }
    });

    for (const method of ['session/event', 'session/lifecycle']) {
      connection.onNotification(method, (params) => this._sessionNotification(method, params));
    }
  }

  _sessionNotification(method, params) {
    if (typeof params?.generation === 'number') {
      if (params.generation < this.generation) return; // a replaced session: stale, dropped
      if (params.generation > this.generation) {
        this.generation = params.generation;
        this.sessionId = params.sessionId;
      }
    }
    for (const listener of this._listeners) listener(params, method);
  }

  /** Listen to session/event and session/lifecycle of the current generation. Returns an unsubscribe. */
  onSessionEvent(listener) {
    this._listeners.add(listener);
    return () => this._listeners.delete(listener);
  }

  /** Any request; rejects with a ResponseError ({code, message, data: {errors: [...]}}) or on timeout. */
  async request(method, params, { timeoutMs = 60000 } = {}) {
    const source = new rpc.CancellationTokenSource();
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => {
        source.cancel(); // vscode-jsonrpc sends $/cancelRequest
        reject(new Error(`no answer to ${method} within ${timeoutMs} ms`));
      }, timeoutMs);
    });
    try {
      const result = await Promise.race([
        params === undefined
          ? this.connection.sendRequest(method, source.token)
          : this.connection.sendRequest(method, params, source.token),
        timeout,
      ]);
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

  async initialize({ handlers = {} } = {}) {
    const capabilities = { progress: {} };
    if (handlers['host/authorizeProject']) capabilities.authorizeProject = {};
    if (Object.keys(handlers).some((m) => m.startsWith('ui/'))) capabilities.extensionUi = {};
    for (const [method, handler] of Object.entries(handlers)) {
      this.connection.onRequest(method, handler);
    }
    this.server = await this.request('initialize', {
      protocolVersion: PROTOCOL_VERSION,
      clientInfo: { name: 'rpcd-node-client', version: '0.1.0' },
      capabilities,
    });
    return this.server;
  }

  /** shutdown + exit, end stdin, wait graceMs, then SIGTERM, then SIGKILL. Resolves with the exit info. */
  async close({ graceMs = 3000 } = {}) {
    if (this.child.exitCode === null && this.child.signalCode === null) {
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

/**
 * Spawn the daemon (default: `python3 -P -m rpcd`) and initialize it.
 * Options: command (argv array), args, cwd, env, handlers ({'host/authorizeProject': fn, 'ui/confirm': fn, ...}).
 */
async function spawnDaemon({ command = DEFAULT_COMMAND, args = [], cwd, env, handlers = {} } = {}) {
  const [file, ...rest] = command;
  const child = spawn(file, [...rest, ...args], {
    cwd, env: withoutRelativePythonPath(env ?? process.env), stdio: ['pipe', 'pipe', 'pipe'],
  });
  await new Promise((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', reject);
  });
  const connection = rpc.createMessageConnection(
    new rpc.StreamMessageReader(child.stdout),
    new rpc.StreamMessageWriter(child.stdin),
  );
  connection.listen();
  const client = new RpcdClient(child, connection);
  try {
    await client.initialize({ handlers });
  } catch (error) {
    await client.close({ graceMs: 1000 });
    error.stderrTail = client.stderrLines.slice(-20);
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
  RpcdClient, spawnDaemon, daemonCommandFromEnv, withoutRelativePythonPath, DEFAULT_COMMAND, PROTOCOL_VERSION,
};
