// What a session knows about a server's progress and its pushed diagnostics, and
// the waits built on them: "has it finished indexing" (per the row's strategy) and
// "has it published diagnostics for this document". Fed by the session's
// notification handler; everything here is bounded (tokens, documents, items).
//
// $/progress: https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#progress
// publishDiagnostics: https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#textDocument_publishDiagnostics
import { readsServerStatus, type Readiness } from '../servers/server-row.js';
import type { Abortable } from '../../util/deadline.js';

/** A server cannot make us track more open progress tokens than this. */
const MAX_TOKENS = 1024;
/** Diagnostics kept per document; more are cut (the answer says truncated). */
export const MAX_DIAGNOSTICS_PER_DOC = 1000;
/** Documents not (yet) opened whose latest diagnostics are kept, oldest dropped first. */
export const MAX_EARLY_DOCS = 1024;

export interface Published {
  items: unknown[];
  /** The server sent more than we keep. */
  cut: boolean;
  at: number;
  /** The document version the server says these are for (publishDiagnostics' optional `version`). */
  version?: number;
}

export class ReadinessTracker {
  private readonly strategy: Readiness;
  private readonly graceMs: number;
  private readonly open = new Set<string>();
  private readonly ignored = new Set<string>();
  private quietSince: number;
  /** logMessage strategy: the server has logged its "finished indexing" line. */
  private logSeen = false;
  /** A non-ignored progress has begun (for `expectProgress`). */
  private progressSeen = false;
  /** The last `experimental/serverStatus` said quiescent (for `quiescentStatus`; none yet: false). */
  private quiescent = false;
  /** Diagnostics last published per document URI, only for documents we opened. */
  private readonly published = new Map<string, Published>();
  private readonly watched = new Set<string>();
  /**
   * Diagnostics a server pushed for documents we had not opened. gopls publishes
   * for every file of the packages it loads, and does not publish again when a
   * later didOpen leaves them unchanged: without these, a diagnostics query on such
   * a file would wait out its window. Roots are immutable, so they stay true.
   */
  private readonly early = new Map<string, Published>();
  private waiters = new Set<() => void>();

  constructor(strategy: Readiness, graceMs: number, now = Date.now()) {
    this.strategy = strategy;
    this.graceMs = strategy.graceMs ?? graceMs;
    // A server may begin its first progress a little after `initialized`
    // (typescript-language-server: ~0.4 s); the grace covers the gap, unless the
    // server queues requests until it can answer them anyway.
    this.quietSince = strategy.kind === 'progress' && strategy.queuesFromStart ? -Infinity : now;
  }

  /**
   * A document was closed (a check's added file): stop keeping its diagnostics, and
   * forget every unopened document's, which a check's edits may have changed.
   */
  forget(uri: string): void {
    this.watched.delete(uri);
    this.published.delete(uri);
    this.early.clear();
  }

  /** A check's edits were undone: what was pushed for unopened documents meanwhile described the patched program. */
  forgetEarly(): void {
    this.early.clear();
  }

  /** Start keeping diagnostics for a document (called at didOpen). */
  watch(uri: string): void {
    this.watched.add(uri);
    const e = this.early.get(uri);
    if (e) {
      this.early.delete(uri);
      if (!this.published.has(uri)) this.published.set(uri, e);
    }
  }

  onProgress(params: unknown): void {
    if (typeof params !== 'object' || params === null) return;
    const { token, value } = params as { token?: unknown; value?: { kind?: unknown; title?: unknown } };
    if ((typeof token !== 'string' && typeof token !== 'number') || typeof value !== 'object' || value === null) return;
    const key = String(token);
    if (value.kind === 'begin') {
      const title = typeof value.title === 'string' ? value.title : '';
      if (this.strategy.ignoreTitles?.test(title)) {
        if (this.ignored.size < MAX_TOKENS) this.ignored.add(key);
      } else if (this.open.size < MAX_TOKENS) {
        this.open.add(key);
        this.progressSeen = true;
      }
    } else if (value.kind === 'end') {
      this.ignored.delete(key);
      if (this.open.delete(key)) this.quietSince = Date.now();
    }
    this.wake();
  }

  /**
   * rust-analyzer's `experimental/serverStatus`: `quiescent` once nothing is left to
   * load (workspace fetch, crate graph, files). Only the boolean is read; health and
   * message (which may quote paths) are dropped.
   */
  onServerStatus(params: unknown): void {
    const q = (params as { quiescent?: unknown } | null)?.quiescent;
    if (typeof q !== 'boolean' || q === this.quiescent) return;
    this.quiescent = q;
    this.wake();
  }

  /** window/logMessage: only tested against the row's pattern, never kept (it may quote source or paths). */
  onLog(params: unknown): void {
    if (this.strategy.kind !== 'logMessage' || this.logSeen) return;
    const message = (params as { message?: unknown } | null)?.message;
    if (typeof message !== 'string' || !this.strategy.pattern.test(message.slice(0, 4096))) return;
    this.logSeen = true;
    this.wake();
  }

  onDiagnostics(params: unknown): void {
    if (typeof params !== 'object' || params === null) return;
    const { uri, diagnostics } = params as { uri?: unknown; diagnostics?: unknown };
    if (typeof uri !== 'string' || uri.length > 8192 || !Array.isArray(diagnostics)) return;
    const cut = diagnostics.length > MAX_DIAGNOSTICS_PER_DOC;
    const version = (params as { version?: unknown }).version;
    const p: Published = { items: cut ? diagnostics.slice(0, MAX_DIAGNOSTICS_PER_DOC) : diagnostics, cut, at: Date.now() };
    if (typeof version === 'number') p.version = version;
    if (!this.watched.has(uri)) {
      this.early.delete(uri);
      this.early.set(uri, p);
      if (this.early.size > MAX_EARLY_DOCS) this.early.delete(this.early.keys().next().value!);
      return;
    }
    this.published.set(uri, p);
    this.wake();
  }

  /** The last diagnostics the server pushed for a document, if any. */
  diagnosticsFor(uri: string): Published | undefined {
    return this.published.get(uri);
  }

  /** How long until the server counts as idle (0: now; Infinity: progress is open). */
  msUntilQuiet(now = Date.now()): number {
    if (this.open.size > 0) return Infinity;
    return Math.max(0, this.quietSince + this.graceMs - now);
  }

  /** documentDiagnostics with `progressWithinMs`: how long a progress may still begin after `p` (0: none is awaited). */
  private msUntilProgressDue(p: Published, now: number): number {
    const within = this.strategy.kind === 'documentDiagnostics' ? this.strategy.progressWithinMs : undefined;
    return within === undefined || this.progressSeen ? 0 : Math.max(0, p.at + within - now);
  }

  isReady(uri: string | undefined, now = Date.now()): boolean {
    if (this.msUntilQuiet(now) > 0) return false;
    if (this.strategy.kind === 'documentDiagnostics' && uri !== undefined) {
      const p = this.published.get(uri);
      return p !== undefined && this.msUntilProgressDue(p, now) === 0;
    }
    if (this.strategy.kind === 'logMessage') return this.logSeen;
    if (readsServerStatus(this.strategy) && !this.quiescent) return false;
    if (this.strategy.kind === 'progress' && this.strategy.expectProgress) return this.progressSeen;
    return true;
  }

  /**
   * Wait until ready for `uri`, at most `maxMs`. Resolves true when ready, false
   * when the bound passed or `signal` aborted (the caller then answers incomplete,
   * or checks the signal itself).
   */
  async waitReady(uri: string | undefined, maxMs: number, signal?: Abortable): Promise<boolean> {
    const until = Date.now() + maxMs;
    for (;;) {
      const now = Date.now();
      if (this.isReady(uri, now)) return true;
      if (now >= until || signal?.aborted) return false;
      const quietIn = this.msUntilQuiet(now);
      const published = uri === undefined ? undefined : this.published.get(uri);
      const dueIn = published ? this.msUntilProgressDue(published, now) : 0;
      const wakeIn = Math.min(quietIn > 0 && quietIn !== Infinity ? quietIn : Infinity, dueIn > 0 ? dueIn : Infinity);
      await this.changed(Math.min(until - now, wakeIn), signal);
    }
  }

  /** Wait for diagnostics published at or after `since` for `uri`, at most maxMs. */
  async waitDiagnostics(uri: string, since: number, maxMs: number, signal?: Abortable, version?: number): Promise<Published | undefined> {
    const until = Date.now() + maxMs;
    for (;;) {
      const p = this.published.get(uri);
      if (p && p.at >= since && (version === undefined || p.version === undefined || p.version === version)) return p;
      const now = Date.now();
      if (now >= until || signal?.aborted) return undefined;
      await this.changed(until - now, signal);
    }
  }

  /** Resolve on the next progress/diagnostics event, after ms, or on abort. */
  changed(ms: number, signal?: Abortable): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  /** Wake every waiter (events, and the session ending). */
  wake(): void {
    const w = this.waiters;
    this.waiters = new Set();
    for (const fn of w) fn();
  }
}
