// Recycling, the pool's second job kept out of pool.ts: a session past
// LSPD_SESSION_RECYCLE_REQUESTS requests or whose jail uses
// LSPD_SESSION_RECYCLE_MEMORY_BYTES (servers only grow: 429 → 989 MiB in five minutes
// of bench/load) gets a successor, started outside the pool's map and made ready on
// the document the old one opened first; only then does the pool point the key at it
// (SessionPool.adopt), and the old one stops when its last lease goes. So no query
// waits for the successor and none loses the session it holds.
import type { Config } from '../../config.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../../metrics.js';
import { deadline, type Abortable } from '../../util/deadline.js';
import type { SessionSpec } from './pool.js';
import type { Session } from './session.js';

/** What recycling asks of the pool. */
export interface RecycleHost {
  config: Config;
  log: Logger;
  metrics: Metrics;
  /** Aborted when the pool closes. */
  closed: Abortable;
  /** Sessions in the pool's map (successors are counted here). */
  sessionCount(): number;
  /** A session for `key`, not yet in the map. */
  newSession(key: string, spec: SessionSpec): Session;
  /** `next` is ready: the pool puts it under `key` in `old`'s place (or stops it). */
  adopt(key: string, next: Session, old: Session): void;
}

/** After a successor failed to become ready, how long the old session serves before recycling is tried again. */
const RECYCLE_RETRY_MS = 30_000;

export class Recycler {
  /** Successors being made ready for sessions past a threshold, by key (not in the pool's map until ready). */
  private readonly successors = new Map<string, Session>();
  /** Per session: when recycling may look again (after a failed successor), when memory was last read. */
  private readonly checks = new WeakMap<Session, { notBefore: number; memoryReadAt: number }>();

  constructor(private readonly host: RecycleHost) {}

  /** Start a successor for `old` when it is past a threshold and the pool has room for both. */
  maybeRecycle(key: string, old: Session, spec: SessionSpec, now: number): void {
    if (old.state.kind !== 'ready' || this.successors.has(key)) return;
    const why = this.reason(old, now);
    if (!why || this.host.sessionCount() + this.successors.size >= this.host.config.maxSessions) return;
    const next = this.host.newSession(key, spec);
    if (old.asked) next.foreground(); // it replaces one queries use: no guess
    this.successors.set(key, next);
    this.host.metrics.recycles.inc({ server: old.key.server, reason: why });
    this.host.log.info({ server: old.key.server, root: old.key.rootId, why, requests: old.requests, memoryBytes: old.memoryBytes() }, 'replacing session');
    void this.makeReady(next, old).then(
      () => {
        if (this.successors.get(key) !== next) return; // its root was stopped or restarted meanwhile
        this.successors.delete(key);
        this.host.adopt(key, next, old);
      },
      (err: unknown) => {
        if (this.successors.get(key) === next) this.successors.delete(key);
        void next.stop();
        // The old one serves on; it is looked at again after a while, not on every query.
        this.checks.set(old, { notBefore: Date.now() + RECYCLE_RETRY_MS, memoryReadAt: 0 });
        this.host.log.warn({ server: old.key.server, root: old.key.rootId, err: (err as Error).message }, 'successor session not ready; the old one serves on');
      },
    );
  }

  /** A session ended: if it was a successor, it is one no longer. */
  forget(key: string, s: Session): void {
    if (this.successors.get(key) === s) this.successors.delete(key);
  }

  /** Stop and forget the successors of a root (stopped, or restarted for its dependencies). */
  drop(rootId: string): Promise<void>[] {
    const stops: Promise<void>[] = [];
    for (const [key, s] of [...this.successors]) {
      if (s.key.rootId !== rootId) continue;
      this.successors.delete(key);
      stops.push(s.stop());
    }
    return stops;
  }

  isSuccessor(s: Session): boolean {
    for (const x of this.successors.values()) if (x === s) return true;
    return false;
  }

  /** Every successor, forgotten (the pool closes and stops them). */
  takeAll(): Session[] {
    const all = [...this.successors.values()];
    this.successors.clear();
    return all;
  }

  list(): Session[] {
    return [...this.successors.values()];
  }

  /** Why `s` should be replaced now ('requests' or 'memory'), if it should. Memory is read at most once a second. */
  private reason(s: Session, now: number): 'requests' | 'memory' | undefined {
    const c = this.host.config;
    const check = this.checks.get(s) ?? { notBefore: 0, memoryReadAt: 0 };
    this.checks.set(s, check);
    if (now < check.notBefore) return undefined;
    if (c.sessionRecycleRequests > 0 && s.requests >= c.sessionRecycleRequests) return 'requests';
    if (c.sessionRecycleMemoryBytes > 0 && now - check.memoryReadAt >= 1000) {
      check.memoryReadAt = now;
      // Before the cap whatever the two settings say: a threshold at or past it would never be met.
      const threshold = Math.min(c.sessionRecycleMemoryBytes, Math.floor(c.jailMemoryBytes * 0.75));
      if ((s.memoryBytes() ?? 0) >= threshold) return 'memory';
    }
    return undefined;
  }

  /** Initialize, then open the document the old session opened first and wait for the row's readiness on it. */
  private async makeReady(next: Session, old: Session): Promise<void> {
    const c = this.host.config;
    const dl = deadline(this.host.closed, c.initializeTimeoutMs + c.readyTimeoutMs);
    try {
      await next.whenReady(dl.signal);
      const doc = old.firstDoc;
      if (doc) await next.waitReady(next.open(doc.rel, doc.languageId, doc.text), c.readyTimeoutMs, dl.signal);
    } finally {
      dl.clear();
    }
  }
}
