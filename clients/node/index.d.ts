// Type declarations for rpcd-client (rpcdClient.js). The wire shapes are documented in
// docs/rpc-surface.md and published as OpenRPC (protocol/openrpc.json) by the daemon's package.
import type { ChildProcess } from 'node:child_process';
import type { MessageConnection, RequestHandler } from 'vscode-jsonrpc/node';

export declare const PROTOCOL_VERSION: number;

/** A session notification's params: every one carries the session, its generation and seq. */
export interface SessionNotificationParams {
  sessionId: string;
  generation: number;
  seq: number;
  event: { type: string; [key: string]: unknown };
}

export type SessionListener = (
  params: SessionNotificationParams,
  method: 'session/event' | 'session/lifecycle',
) => void;

/** Answers to daemon -> client requests: 'host/authorizeProject', 'ui/confirm', 'ui/select', ... */
export type Handlers = Record<string, RequestHandler<any, any, any>>;

export interface RequestOptions {
  /** Reject (and send $/cancelRequest) after this many milliseconds; default 60000. */
  timeoutMs?: number;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export declare class RpcdClient {
  constructor(child: ChildProcess, connection: MessageConnection);
  readonly child: ChildProcess;
  readonly connection: MessageConnection;
  /** The newest generation seen: older session notifications are dropped. */
  generation: number;
  sessionId: string | undefined;
  /** The initialize result (capabilities.methods lists every method served). */
  server: Record<string, unknown> | undefined;
  /** The last 200 lines of the daemon's stderr. */
  stderrLines: string[];
  /** Listen to session/event and session/lifecycle of the current generation; returns an unsubscribe. */
  onSessionEvent(listener: SessionListener): () => void;
  /** Any request; rejects with a ResponseError ({code, message, data: {errors: [...]}}) or on timeout. */
  request<R = any>(method: string, params?: unknown, options?: RequestOptions): Promise<R>;
  initialize(options?: { handlers?: Handlers }): Promise<Record<string, unknown>>;
  /** shutdown + exit, end stdin, wait graceMs, then SIGTERM, then SIGKILL. */
  close(options?: { graceMs?: number }): Promise<ExitInfo>;
}

export interface SpawnOptions {
  /** The daemon's argv (default DEFAULT_COMMAND, ['python3', '-P', '-m', 'rpcd']: keep `-P`, or use the
   *  `rpcd` console script, so the project the daemon starts in is not on Python's sys.path). */
  command?: string[];
  args?: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  handlers?: Handlers;
}

/** Spawn the daemon and initialize it. */
export declare function spawnDaemon(options?: SpawnOptions): Promise<RpcdClient>;

/** The default daemon argv: ['python3', '-P', '-m', 'rpcd']. */
export declare const DEFAULT_COMMAND: readonly string[];

/** `env` without empty or relative PYTHONPATH entries (Python would resolve them against the project). */
export declare function withoutRelativePythonPath(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv;

/** The daemon command from RPCD_DAEMON_CMD (a JSON array or a space-separated string). */
export declare function daemonCommandFromEnv(fallback?: string[]): string[];
