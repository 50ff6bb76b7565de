// One language server running in the SERVE jail for one (server, root, workspace):
// its lifecycle as a state union, the bounded initialize and shutdown/exit, didOpen
// once per document, readiness, requests under a deadline with $/cancelRequest,
// and retirement when the server crashes, floods, breaks framing or stops answering.
//
//   starting ──▶ ready ──▶ stopped
//       │          │          ▲
//       └──────────┴─▶ failed ┘        (any other transition throws)
//
// A session never recovers in place: once failed it stays failed, and the pool
// replaces it on the next query. That keeps every field valid only in its state.
import type { Config } from '../../config.js';
import { isAppError, type AppError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../../metrics.js';
import type { Bind, Jail, JailedProcess } from '../../jail/types.js';
import { answerServerRequest, initializeParams } from './client-side.js';
import { raceAbort, type Abortable } from '../../util/deadline.js';
import { IllegalTransition } from '../../util/state-machine.js';
import { encodingFromLsp, type Encoding } from '../wire/encoding.js';
import { jailPathToFileUri, treeFileUri, treeJailPath } from '../answer/paths.js';
import { writeSessionFiles, type SessionFiles } from './session-files.js';
import { ReadinessTracker, type Published } from './readiness.js';
import type { ServerRow } from '../servers/server-row.js';
import { FrameError } from '../wire/frame-reader.js';
import { WriteBlockedError } from '../wire/bounded-writer.js';
import { Budget, BudgetExceededError, ConnectionClosedError, LspConnection } from '../wire/transport.js';
import { TREE_AT } from '../../jail/layout.js';

export interface SessionKey {
  server: string;
  rootId: string;
  /** Root-relative workspace directory; '' is the tree's top. */
  workspace: string;
  /** 'check': a POST /v1/check scratch session (pool.ts SessionSpec.purpose). */
  purpose?: 'check';
}

export type SessionState =
  | { kind: 'starting'; since: number; proc?: JailedProcess; conn?: LspConnection }
  | { kind: 'ready'; since: number; proc: JailedProcess; conn: LspConnection; caps: Record<string, unknown>; encoding: Encoding }
  | { kind: 'failed'; error: SessionFailedError }
  | { kind: 'stopped' };
export type SessionStateKind = SessionState['kind'];

const TRANSITIONS: Record<SessionStateKind, readonly SessionStateKind[]> = {
  starting: ['ready', 'failed', 'stopped'],
  ready: ['failed', 'stopped'],
  failed: ['stopped'],
  stopped: [],
};

/** Why a session cannot serve: failed to start, or ended while serving. */
export class SessionFailedError extends Error {
  override name = 'SessionFailedError';
  constructor(
    readonly phase: 'start' | 'run',
    readonly cause_: 'spawn' | 'initialize' | 'exit' | 'protocol' | 'flood' | 'wedged' | 'stopped',
    message: string,
    /** The server's stderr tail, or how to read it when asked (its last bytes may still be on their way). */
    private readonly tail: string | (() => string) = '',
    /** The jail refused the spawn for load (503 busy: no uid for this org now): the query's answer, and no back-off. */
    readonly refusal?: AppError,
    /** Settles once the tail is all there is (the server's stderr ended, or a bound passed): await it before reading. */
    readonly tailSettled: Promise<void> = Promise.resolve(),
  ) {
    super(message);
  }

  get stderrTail(): string {
    return typeof this.tail === 'function' ? this.tail() : this.tail;
  }
}

/** How long a failed request waits for a dead server's last stderr bytes, which can arrive after its stdout closed. */
const STDERR_SETTLE_MS = 1000;

export interface SessionDeps {
  row: ServerRow;
  key: SessionKey;
  /** The org of the root: the jail's uid counts against its share. */
  org: string;
  jail: Jail;
  config: Config;
  log: Logger;
  metrics: Metrics;
  treeHostDir: string;
  /** The root's fetched dependencies (FetchManager.serveBinds), read-only; mounted after the tree. */
  depBinds?: readonly Bind[];
  /** Their environment for this server (FetchManager.serveEnv: e.g. GOMODCACHE). */
  depEnv?: Readonly<Record<string, string>>;
  /** `workspace/configuration` answers with them, in place of row.settings (pyright's extra paths). */
  depSettings?: Readonly<Record<string, unknown>>;
  /** Host directory under which per-session generated files (row.sessionFiles) are written. */
  sessionFilesDir: string;
  /** Started for nobody yet (a warm-up): its jail runs at a low CPU weight until a query leases it (foreground()). */
  background?: boolean;
}

export class Session {
  readonly key: SessionKey;
  readonly row: ServerRow;
  /** Queries holding this session; the reaper never takes a leased session. */
  leases = 0;
  lastUsed = Date.now();
  /** When it was spawned: a fetch that finished before this saw it already. */
  readonly createdAt = Date.now();
  /** Set by a warm-up (warm-up.ts): 'warming' while it drives the server to readiness, 'warmed' once it did. */
  warm: 'warming' | 'warmed' | undefined;
  /** Requests sent to the server (the pool recycles a session past LSPD_SESSION_RECYCLE_REQUESTS). */
  requests = 0;
  /** A query leased it once (SessionPool.acquire): no longer only a warm-up's guess. */
  asked = false;
  /** The first document opened: a successor (pool recycling) opens it to be made ready the same way. */
  firstDoc: { rel: string; languageId: string; text: string } | undefined;
  /** What generating its files left out or changed (row.sessionFiles), said in every answer it gives. */
  notes: readonly string[] = [];
  /** Settles when ready (or rejects with SessionFailedError). */
  readonly started: Promise<void>;
  private st: SessionState = { kind: 'starting', since: Date.now() };
  private readonly deps: SessionDeps;
  private log: Logger;
  private readonly tracker: ReadinessTracker;
  private readonly opened = new Set<string>();
  /** Versions of documents changed since their didOpen (a check's scratch session). */
  private readonly versions = new Map<string, number>();
  private readonly endListeners = new Set<(s: Session) => void>();
  private stopping: Promise<void> | undefined;
  private inFlight = 0;
  private readonly slotWaiters: (() => void)[] = [];

  constructor(deps: SessionDeps) {
    this.deps = deps;
    this.key = deps.key;
    this.row = deps.row;
    this.log = deps.log.child({ mod: 'session', root: deps.key.rootId, server: deps.row.name, workspace: deps.key.workspace });
    this.tracker = new ReadinessTracker(deps.row.readiness, deps.config.readyGraceMs);
    deps.metrics.spawns.inc({ server: deps.row.name });
    this.started = this.run();
    this.started.catch(() => {}); // observed by whoever awaits it; never an unhandled rejection
  }

  get state(): SessionState {
    return this.st;
  }

  get pid(): number | undefined {
    return this.st.kind === 'starting' || this.st.kind === 'ready' ? this.st.proc?.pid : undefined;
  }

  /** The position encoding negotiated with the server (utf-16 until ready). */
  get encoding(): Encoding {
    return this.st.kind === 'ready' ? this.st.encoding : 'utf-16';
  }

  /** Does the server answer pull diagnostics (textDocument/diagnostic)? Advertised, or its row says it does (`pullDiagnostics`). */
  get pullsDiagnostics(): boolean {
    if (this.st.kind !== 'ready') return false;
    return this.row.pullDiagnostics === true || (this.st.caps.diagnosticProvider !== undefined && this.st.caps.diagnosticProvider !== false);
  }

  /** The server's advertised value of one capability (undefined unless ready). */
  capability(provider: string): unknown {
    return this.st.kind === 'ready' ? this.st.caps[provider] : undefined;
  }

  /** Does the server advertise `<name>Provider`? */
  supports(provider: string): boolean {
    if (this.st.kind !== 'ready') return false;
    const v = this.st.caps[provider];
    return v !== undefined && v !== null && v !== false;
  }

  /** Called once when the session fails or stops. */
  onEnd(fn: (s: Session) => void): void {
    this.endListeners.add(fn);
  }

  private transition(next: SessionState): void {
    if (!TRANSITIONS[this.st.kind].includes(next.kind)) {
      throw new IllegalTransition(`session ${this.row.name}`, this.st.kind, next.kind);
    }
    const prev = this.st.kind;
    this.st = next;
    this.log.debug({ from: prev, to: next.kind }, 'session state');
    if (next.kind === 'failed' || next.kind === 'stopped') {
      this.tracker.wake();
      for (const w of this.slotWaiters.splice(0)) w();
      if (prev === 'starting' || prev === 'ready') for (const fn of this.endListeners) fn(this);
    }
  }

  private async run(): Promise<void> {
    const { row, config, jail, key } = this.deps;
    const t0 = Date.now();
    const wsPath = treeJailPath(key.workspace);
    let proc: JailedProcess;
    let files: SessionFiles | undefined;
    try {
      // Files the row generates for this workspace (clangd's compile_commands.json),
      // written by the daemon and bound read-only; removed when the jail is gone.
      if (row.sessionFiles) {
        const generated = await row.sessionFiles({ treeHostDir: this.deps.treeHostDir, workspace: key.workspace, workspaceAt: wsPath }, config);
        // A row may give notes alone (gopls: what its go.mod asks that lspd will not do).
        if (Object.keys(generated.files).length) files = await writeSessionFiles(this.deps.sessionFilesDir, generated.files);
        // Complete now that every body is written: what a bound or a refused flag changed.
        this.notes = [...generated.notes];
        if (this.notes.length) this.log.warn({ notes: this.notes }, 'session notes');
      }
      proc = await jail.spawn({
        phase: 'serve',
        org: this.deps.org,
        argv: [...row.argv],
        env: { ...row.env, ...this.deps.depEnv },
        tree: { hostDir: this.deps.treeHostDir, at: TREE_AT },
        binds: [...(row.binds ?? []), ...(this.deps.depBinds ?? []), ...(files?.binds ?? [])],
        ...(row.systemRoot !== undefined ? { systemRoot: row.systemRoot } : {}),
        cwd: wsPath,
        stderrRingBytes: config.stderrRingBytes,
        uncappedStartMs: config.jailStartUncappedMs,
        ...(this.deps.background && !this.asked ? { background: true } : {}),
      });
    } catch (err) {
      void files?.remove();
      const refusal = isAppError(err) && err.code === 'busy' ? err : undefined;
      throw this.fail(new SessionFailedError('start', 'spawn', `the jail could not start ${row.name}: ${(err as Error).message}`, '', refusal));
    }
    if (files) void proc.exited.then(() => files.remove());
    if (this.asked) proc.foreground?.(); // leased while its jail was being spawned
    if (this.st.kind !== 'starting') {
      proc.kill();
      throw this.endedError();
    }
    this.log = this.log.child({ serverPid: proc.pid }); // `pid` is the daemon's, set on the root logger
    const conn = new LspConnection({
      input: proc.stdout,
      output: proc.stdin,
      maxFrameBytes: config.maxFrameBytes,
      onNotification: (method, params) => this.onNotification(method, params),
      onRequest: (method, params) => answerServerRequest(this.row, this.key.workspace, method, params, this.deps.depSettings),
      log: (message) => this.log.debug({ jsonrpc: message }, 'vscode-jsonrpc'),
      onClose: (err) => {
        if (!err) return;
        if (err instanceof FrameError) this.retire('protocol', `${row.name} broke the LSP framing: ${err.message}`);
        else if (err instanceof WriteBlockedError) this.retire('wedged', `${row.name}: ${err.message}`);
        else this.retire('exit', `${row.name} exited or closed its output`);
      },
    });
    this.st = { ...this.st, proc, conn };
    void proc.exited.then((exit) => {
      if (this.st.kind === 'starting' || this.st.kind === 'ready') {
        this.retire('exit', `${row.name} exited (${exit.signal ?? `code ${exit.code}`})`);
      }
    });
    const wsUri = jailPathToFileUri(wsPath);
    let init: { capabilities?: Record<string, unknown> };
    try {
      init = (await conn.request('initialize', initializeParams(this.row, wsUri, wsPath), {
        signal: AbortSignal.timeout(config.initializeTimeoutMs),
        budget: new Budget(config.maxMessagesPerRequest, config.maxInspectBytes),
      })) as typeof init;
    } catch (err) {
      const e = err as Error;
      const timedOut = e.name === 'TimeoutError';
      const msg = timedOut ? `${row.name} did not answer initialize within ${config.initializeTimeoutMs} ms` : `${row.name} failed to initialize: ${e.message}`;
      const now = this.st as SessionState; // changed while we awaited
      if (now.kind === 'failed') throw now.error;
      throw this.fail(new SessionFailedError('start', timedOut ? 'initialize' : 'protocol', msg, proc.stderrTail()));
    }
    if (this.st.kind !== 'starting') throw this.endedError();
    const caps = typeof init?.capabilities === 'object' && init.capabilities !== null ? init.capabilities : {};
    conn.notify('initialized', {});
    this.transition({ kind: 'ready', since: Date.now(), proc, conn, caps, encoding: encodingFromLsp(caps.positionEncoding) });
    this.log.info({ encoding: this.encoding, ms: Date.now() - t0 }, 'session ready');
  }

  private onNotification(method: string, params: unknown): void {
    if (method === '$/progress') {
      this.tracker.onProgress(params);
      if (this.log.isLevelEnabled('debug')) this.log.debug({ kind: (params as { value?: { kind?: unknown } })?.value?.kind }, 'server progress');
    } else if (method === 'window/logMessage') {
      this.tracker.onLog(params); // tested against the row's readiness pattern, never kept
    } else if (method === 'experimental/serverStatus') {
      this.tracker.onServerStatus(params); // offered only to a row whose readiness reads it
    } else if (method === 'textDocument/publishDiagnostics') {
      this.tracker.onDiagnostics(params);
      if (this.log.isLevelEnabled('debug')) this.log.debug('server published diagnostics');
    }
    // telemetry/event, …: dropped unread (they may quote source).
  }

  /** A query leased it: from now on it is no guess, and its jail gets the default CPU weight (idempotent). */
  foreground(): void {
    this.asked = true;
    const st = this.st;
    if ((st.kind === 'starting' || st.kind === 'ready') && 'proc' in st) st.proc?.foreground?.();
  }

  /** Wait until ready (bounded by the caller's signal). */
  async whenReady(signal: Abortable): Promise<void> {
    if (this.st.kind === 'ready') return;
    if (this.st.kind === 'failed') throw this.st.error;
    if (this.st.kind === 'stopped') throw this.endedError();
    await raceAbort(this.started, signal);
  }

  /** Take one of the row's in-flight slots; resolves to its release. */
  async slot(signal: Abortable): Promise<() => void> {
    while (this.inFlight >= this.row.maxInFlight) {
      if (this.st.kind === 'failed' || this.st.kind === 'stopped') throw this.endedError();
      await raceAbort(new Promise<void>((r) => this.slotWaiters.push(r)), signal);
    }
    this.inFlight++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight--;
      // Wake every waiter to re-check: one that gave up (its deadline passed) must
      // not swallow the wake-up a live one needed.
      for (const w of this.slotWaiters.splice(0)) w();
    };
  }

  /**
   * didOpen, once per document per session: it is not idempotent, and a root never
   * changes, so the first text is the text for good. Returns the document's URI.
   */
  open(rel: string, languageId: string, text: string, opts: { transient?: boolean } = {}): string {
    const st = this.readyState();
    const uri = treeFileUri(rel);
    if (!this.opened.has(uri)) {
      this.opened.add(uri);
      // A check's added file is not the tree's: a successor must never open it.
      if (!opts.transient) this.firstDoc ??= { rel, languageId, text };
      this.tracker.watch(uri);
      st.conn.notify('textDocument/didOpen', { textDocument: { uri, languageId, version: 1, text } });
    }
    return uri;
  }

  /**
   * didChange to `text` in full (a check's scratch session only, src/check/: plain
   * sessions never change a document, the root is immutable). Returns the new version.
   */
  change(rel: string, text: string): number {
    const st = this.readyState();
    const uri = treeFileUri(rel);
    if (!this.opened.has(uri)) throw new Error(`didChange of ${rel}, which is not open`);
    const version = (this.versions.get(uri) ?? 1) + 1;
    this.versions.set(uri, version);
    st.conn.notify('textDocument/didChange', { textDocument: { uri, version }, contentChanges: [{ text }] });
    return version;
  }

  /** didClose (a check's added file, undone); the next open of `rel` is a didOpen again. */
  closeDocument(rel: string): void {
    const st = this.readyState();
    const uri = treeFileUri(rel);
    if (!this.opened.delete(uri)) return;
    this.versions.delete(uri);
    this.tracker.forget(uri);
    st.conn.notify('textDocument/didClose', { textDocument: { uri } });
  }

  /** A check's edits were undone: pushes kept for unopened documents may describe the patched program. */
  forgetUnopenedDiagnostics(): void {
    this.tracker.forgetEarly();
  }

  /** The version of an open document (1 from didOpen, then one more per change). */
  versionOf(rel: string): number {
    return this.versions.get(treeFileUri(rel)) ?? 1;
  }

  /**
   * Diagnostics pushed for `uri` after `since` and, when the server says which, for
   * `version` of it: a push for the text before a check's change (or before its undo)
   * can arrive after the change and must not be read as the answer.
   */
  async pushedSince(uri: string, since: number, version: number, maxMs: number, signal: Abortable): Promise<Published | undefined> {
    const first = await this.tracker.waitDiagnostics(uri, since, maxMs, signal, version);
    if (!first) return undefined;
    // As pushedDiagnostics: pyright pushes a changed file twice (an empty set first, then its analysis).
    await this.tracker.changed(Math.min(this.deps.config.diagnosticsSettleMs, maxMs), signal);
    return this.tracker.diagnosticsFor(uri) ?? first;
  }

  /** How many documents it has opened (GET on a root shows it). */
  get openDocuments(): number {
    return this.opened.size;
  }

  /** Whether the tree file `rel` is open in it. */
  isOpen(rel: string): boolean {
    return this.opened.has(treeFileUri(rel));
  }

  /** Memory its jail uses now (the cgroup's usage); undefined when not running or unreadable. */
  memoryBytes(): number | undefined {
    return this.st.kind === 'ready' ? this.st.proc.memoryBytes?.() : undefined;
  }

  /** CPU ms used so far by each process of its jail; empty when not running, undefined when it runs too many to read. */
  cpuTimes(): ReadonlyMap<number, number> | undefined {
    return this.st.kind === 'ready' && this.st.proc.cpuTimes ? this.st.proc.cpuTimes() : new Map();
  }

  /** Wait for the server to finish indexing (per the row's strategy); false when the bound passed. */
  waitReady(uri: string | undefined, maxMs: number, signal: Abortable): Promise<boolean> {
    return this.tracker.waitReady(uri, maxMs, signal);
  }

  /** A cancelled request was never answered (made once per session, not per request). */
  private readonly onUnanswered = (method: string): void => this.retire('wedged', `${this.row.name} did not answer a cancelled ${method}`);

  /** One request under the caller's deadline, with the per-request inspection budget. */
  async request(method: string, params: unknown, signal: Abortable): Promise<unknown> {
    const st = this.readyState();
    const { config } = this.deps;
    this.lastUsed = Date.now();
    this.requests++;
    try {
      const answer = await st.conn.request(method, params, {
        signal,
        budget: new Budget(config.maxMessagesPerRequest, config.maxInspectBytes),
        // A server that answers neither the request nor its cancel for another whole
        // query deadline has stopped working: retire it so the next query gets a fresh
        // one. Not sooner: a server busy with a long synchronous analysis (pyright's
        // first pass on a big tree) reads nothing and answers nothing for a while, and
        // killing it then would restart the same work forever.
        cancelGraceMs: config.queryTimeoutMs,
        onUnanswered: this.onUnanswered,
      });
      // Its first answer: the server has started, and runs under its CPU cap from now on.
      st.proc.capCpu?.();
      return answer;
    } catch (err) {
      if (err instanceof BudgetExceededError) {
        this.retire('flood', `${this.row.name}: ${err.message}`);
        throw this.st.kind === 'failed' ? this.st.error : err;
      }
      if (err instanceof ConnectionClosedError) throw this.st.kind === 'failed' ? this.st.error : this.endedError();
      throw err;
    } finally {
      this.lastUsed = Date.now();
    }
  }

  /** Wait (at most maxMs) until the server has pushed diagnostics for `uri` once; false when it has not. */
  async diagnosed(uri: string, maxMs: number, signal: Abortable): Promise<boolean> {
    return (await this.firstPushed(uri, maxMs, signal)) !== undefined;
  }

  /** Diagnostics the server pushed for `uri`, waiting up to windowMs for the first. */
  async pushedDiagnostics(uri: string, windowMs: number, signal: Abortable): Promise<Published | undefined> {
    const first = await this.firstPushed(uri, windowMs, signal);
    if (!first) return undefined;
    // A server may publish twice in quick succession (syntax, then semantic): take
    // what the settle time brings, no longer.
    await this.tracker.changed(Math.min(this.deps.config.diagnosticsSettleMs, windowMs), signal);
    return this.tracker.diagnosticsFor(uri) ?? first;
  }

  /** What the server has pushed for `uri`, or the first push within maxMs. */
  private async firstPushed(uri: string, maxMs: number, signal: Abortable): Promise<Published | undefined> {
    return this.tracker.diagnosticsFor(uri) ?? (await this.tracker.waitDiagnostics(uri, 0, maxMs, signal));
  }

  /** Retire now: kill the process group, close the transport, mark failed. Idempotent. */
  retire(cause: SessionFailedError['cause_'], message: string): void {
    const st = this.st;
    if (st.kind !== 'starting' && st.kind !== 'ready') return;
    const proc = st.proc;
    this.fail(new SessionFailedError(st.kind === 'starting' ? 'start' : 'run', cause, message, () => proc?.stderrTail() ?? '', undefined, stderrSettled(proc)));
  }

  private fail(error: SessionFailedError): SessionFailedError {
    const st = this.st;
    // Already stopped: what broke (initialize's connection, closed by the stop) is the
    // stop, so the error says so and the pool does not back the key off for it.
    if (st.kind !== 'starting' && st.kind !== 'ready') return st.kind === 'failed' ? st.error : this.endedError();
    // While we stop it, a server exiting is the point, not a failure.
    const stopping = this.stopping !== undefined;
    this.transition(stopping ? { kind: 'stopped' } : { kind: 'failed', error });
    st.proc?.kill();
    st.conn?.close();
    if (!stopping) {
      this.deps.metrics.crashes.inc({ server: this.row.name });
      this.log.warn({ cause: error.cause_, phase: error.phase, err: error.message, stderrTail: tailForLog(error.stderrTail) }, 'session failed');
    }
    return error;
  }

  /**
   * Shut down within shutdownTimeoutMs: `shutdown` (no params: TS 7 rejects
   * `params: [null]`), `exit`, wait for the process; past the deadline kill the
   * process group and close the transport (a blocked write is released only
   * then), then join. Idempotent; concurrent callers share the one stop.
   */
  stop(): Promise<void> {
    this.stopping ??= this.doStop();
    return this.stopping;
  }

  private async doStop(): Promise<void> {
    const { config } = this.deps;
    const st = this.st;
    const deadline = AbortSignal.timeout(config.shutdownTimeoutMs);
    let proc: JailedProcess | undefined;
    if (st.kind === 'ready') {
      proc = st.proc;
      try {
        await st.conn.request('shutdown', undefined, { signal: deadline });
        st.conn.notify('exit');
        await raceAbort(proc.exited, deadline);
      } catch {
        /* past the deadline or already gone: killed below */
      }
    } else if (st.kind === 'starting') {
      proc = st.proc;
      if (!proc) await raceAbort(this.started, deadline).catch(() => {});
    }
    if (this.st.kind === 'starting' || this.st.kind === 'ready') {
      const live = this.st;
      proc ??= live.proc;
      this.transition({ kind: 'stopped' });
      live.proc?.kill();
      live.conn?.close();
    } else if (this.st.kind === 'failed') {
      this.transition({ kind: 'stopped' });
    }
    if (proc) {
      proc.kill();
      await proc.exited;
    }
    this.log.info('session stopped');
  }

  private readyState(): Extract<SessionState, { kind: 'ready' }> {
    if (this.st.kind === 'ready') return this.st;
    if (this.st.kind === 'failed') throw this.st.error;
    throw this.endedError();
  }

  private endedError(): SessionFailedError {
    if (this.st.kind === 'failed') return this.st.error;
    return new SessionFailedError(this.st.kind === 'starting' ? 'start' : 'run', 'stopped', `the ${this.row.name} session was stopped`);
  }
}

/** Its stderr ended, or STDERR_SETTLE_MS passed: the last bytes of a dead server's stderr can arrive after its stdout closed. */
function stderrSettled(proc: JailedProcess | undefined): Promise<void> {
  const done = proc?.stderrDone;
  if (!done) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, STDERR_SETTLE_MS);
    void done.then(() => (clearTimeout(timer), resolve()));
  });
}

/** The last few hundred bytes of stderr for a log line (the jail already scrubbed host paths). */
function tailForLog(tail: string): string {
  return tail.length > 1024 ? tail.slice(-1024) : tail;
}
