// Type declarations for rpcd-client (rpcdClient.js, index.mjs). The wire's shapes and the method,
// notification and server-request maps are generated from the daemon's OpenRPC document
// (protocol/openrpc.json) into methods.d.ts: `python -m rpcd.clients.node_types --write`.
import type { ChildProcess } from 'node:child_process';
import type { MessageConnection } from 'vscode-jsonrpc/node';
import type {
  PromptImage,
  PromptResult,
  RpcdMethods,
  RpcdNotifications,
  RpcdServerRequests,
  SessionEventParams,
  SessionLifecycleParams,
} from './methods';

export * from './methods';

export declare const PROTOCOL_VERSION: number;

/** A session notification's params: every one carries the session, its generation and seq. */
export type SessionNotificationParams = SessionEventParams | SessionLifecycleParams;

export type SessionListener = (
  params: SessionNotificationParams,
  method: 'session/event' | 'session/lifecycle',
) => void;

/** Answers to daemon -> client requests, typed by method ('host/authorizeProject', 'tool/authorize', 'ui/confirm', ...). */
export type Handlers = {
  [M in keyof RpcdServerRequests]?: (
    params: RpcdServerRequests[M]['params'],
  ) => RpcdServerRequests[M]['result'] | Promise<RpcdServerRequests[M]['result']>;
};

export interface RequestOptions {
  /** Reject (and send $/cancelRequest) after this many milliseconds; default 60000; null: wait. */
  timeoutMs?: number | null;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** The daemon could not be started, or exited while the client still needed it. */
export declare class DaemonExitedError extends Error {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  /** The last lines of the daemon's stderr (also in the message). */
  readonly stderrTail: string[];
}

export interface TurnUsage {
  input: number;
  output: number;
  cacheRead: number;
  cacheWrite: number;
  totalTokens: number;
}

/** The daemon's prompt answer plus what the turn's events said (a turn that ran). */
export interface PromptOutcome extends PromptResult {
  /** The text of the turn's last assistant message. */
  text?: string;
  sessionId?: string;
  /** The session's file, once Pi has written it (at the first assistant message). */
  sessionFile?: string;
  usage?: TurnUsage;
  /** US dollars of the turn's model calls. */
  cost?: number;
  /** The turn failed or was aborted. */
  isError?: boolean;
  /** Why, when isError (the provider's 401, a 500 after the retries, ...). */
  errorMessage?: string;
}

export interface PromptOptions {
  images?: PromptImage[];
  streamingBehavior?: 'steer' | 'followUp';
  /** Default null: a turn runs as long as it runs. */
  timeoutMs?: number | null;
}

export declare class RpcdClient {
  constructor(child: ChildProcess, connection: MessageConnection);
  readonly child: ChildProcess;
  readonly connection: MessageConnection;
  /** The newest generation seen: older session notifications are dropped. */
  generation: number;
  sessionId: string | undefined;
  /** The initialize result (capabilities.methods lists every method served). */
  server: RpcdMethods['initialize']['result'] | undefined;
  /** The last 200 lines of the daemon's stderr. */
  stderrLines: string[];
  /** Set once the daemon has exited. */
  exit: ExitInfo | undefined;
  /** Listen to session/event and session/lifecycle of the current generation; returns an unsubscribe. */
  onSessionEvent(listener: SessionListener): () => void;
  /** A request of the contract, typed from the OpenRPC document; rejects with a ResponseError
   *  ({code, message, data: {errors: [...]}}), on timeout, or with a DaemonExitedError. */
  request<M extends keyof RpcdMethods>(
    method: M,
    params?: RpcdMethods[M]['params'],
    options?: RequestOptions,
  ): Promise<RpcdMethods[M]['result']>;
  /** A method this version does not know, its result typed by the caller (a known method with wrong
   *  params stays an error). */
  request<R = unknown, M extends string = string>(
    method: M & (M extends keyof RpcdMethods ? never : unknown),
    params?: unknown,
    options?: RequestOptions,
  ): Promise<R>;
  /** One turn: the answer plus text, sessionId, sessionFile, usage, cost, isError, errorMessage. */
  prompt(text: string, options?: PromptOptions): Promise<PromptOutcome>;
  initialize(options?: { handlers?: Handlers; timeoutMs?: number }): Promise<RpcdMethods['initialize']['result']>;
  /** shutdown + exit, end stdin, wait graceMs, then SIGTERM, then SIGKILL. */
  close(options?: { graceMs?: number }): Promise<ExitInfo>;
}

export interface SpawnOptions {
  /** The daemon's argv (default DEFAULT_COMMAND, ['python3', '-P', '-m', 'rpcd']: keep `-P`, or use the
   *  `rpcd` console script, so the project the daemon starts in is not on Python's sys.path). */
  command?: readonly string[];
  args?: string[];
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  handlers?: Handlers;
  /** Reject when initialize is not answered within this many milliseconds (default 30000). */
  startTimeoutMs?: number;
}

/** Spawn the daemon and initialize it; a DaemonExitedError when it cannot start or exits first. */
export declare function spawnDaemon(options?: SpawnOptions): Promise<RpcdClient>;

/** The default daemon argv: ['python3', '-P', '-m', 'rpcd']. */
export declare const DEFAULT_COMMAND: readonly string[];

/** `env` without empty or relative PYTHONPATH entries (Python would resolve them against the project). */
export declare function withoutRelativePythonPath(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv;

/** The daemon command from RPCD_DAEMON_CMD (a JSON array or a space-separated string). */
export declare function daemonCommandFromEnv(fallback?: readonly string[]): string[];

/** The notification params of a method the daemon sends. */
export type NotificationParams<M extends keyof RpcdNotifications> = RpcdNotifications[M];
