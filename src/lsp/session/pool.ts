// The session pool: one Session per (server, root, workspace, generation of the
// root: a re-upload under a deleted root's key never meets its sessions), spawned lazily,
// shared by every query on it, reaped when idle. Leases are taken in the same
// synchronous step that selects (or creates) the session, so the reaper, which also
// runs synchronously up to its decision, can never take a session between a query
// choosing it and holding it. A crashed session leaves the map at once and the next
// query spawns a fresh one; spawn failures back off exponentially and always retry
// once the back-off has passed (never a permanent "broken" mark).
// Orgs share the pool fairly (src/tenancy/fair-share.ts): a unit is a session some query
// holds; idle sessions are free room (the least recently used one is stopped for
// whoever needs the place, any org). A query that would make one more session busy
// for its org (spawn one, or lease an idle one) is refused 503 busy past the org's
// share; leasing a session its org already keeps busy costs nothing.
// Recycling: a session past LSPD_SESSION_RECYCLE_REQUESTS requests or whose jail
// uses LSPD_SESSION_RECYCLE_MEMORY_BYTES (servers only grow: 429 → 989 MiB in five
// minutes of bench/load) gets a successor, started outside the map and made ready
// on the document the old one opened first; only then does the key point at it, and
// the old one, like a session restartRoot took, stops when its last lease goes. So
// no query waits for the successor and none loses the session it holds.
import { envName, type Config } from '../../config.js';
import { errors } from '../../errors.js';
import { deadline } from '../../util/deadline.js';
import { shareLimits, shareVerdict, type ShareLimits } from '../../tenancy/fair-share.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../../metrics.js';
import type { Bind, Jail } from '../../jail/types.js';
import type { ServerRow } from '../servers/server-row.js';
import { Session, SessionFailedError } from './session.js';

export interface PoolDeps {
  config: Config;
  log: Logger;
  metrics: Metrics;
  jail: Jail;
  /** Host directory for per-session generated files (row.sessionFiles). */
  sessionFilesDir: string;
}

export interface SessionSpec {
  row: ServerRow;
  rootId: string;
  /** Which upload of the root (RootInfo.generation); '' when the caller does not care (tests holding a root). */
  generation?: string;
  /** Root-relative workspace directory ('' for the tree's top). */
  workspace: string;
  treeHostDir: string;
  /** The root's fetched dependencies, bound read-only (FetchManager.serveBinds). */
  depBinds?: readonly Bind[];
  /** Their environment for this row's server (FetchManager.serveEnv). */
  depEnv?: Readonly<Record<string, string>>;
  /** The row's settings with them (row.dependencySettings), when it has such. */
  depSettings?: Readonly<Record<string, unknown>>;
  /**
   * 'check': a POST /v1/check scratch session, whose documents a check changes and
   * restores. Part of the key, so a plain query (and a warm-up) never leases it.
   */
  purpose?: 'check';
  /** Started by a warm-up, for nobody yet: at a low CPU weight until a query leases it (Session.foreground). */
  background?: boolean;
}

export interface Lease {
  readonly session: Session;
  /** Idempotent; the session becomes reapable once no lease holds it. */
  release(): void;
}

interface Backoff {
  failures: number;
  until: number;
  lastError: string;
}

type PoolState = 'open' | 'closing' | 'closed';

export class SessionPool {
  private readonly deps: PoolDeps;
  private readonly log: Logger;
  private readonly sessions = new Map<string, Session>();
  private readonly backoffs = new Map<string, Backoff>();
  /** Sessions taken out of the map by restartRoot, stopped when their last lease goes. */
  private readonly draining = new Set<Session>();
  /** Sessions taken out of the map and still shutting down; close() waits for them. */
  private readonly stopping = new Set<Promise<void>>();
  /** Successors being made ready for sessions past a recycle threshold, by key (not in the map until ready). */
  private readonly successors = new Map<string, Session>();
  /** Per session: when recycling may look again (after a failed successor), when memory was last read. */
  private readonly recycleChecks = new WeakMap<Session, { notBefore: number; memoryReadAt: number }>();
  private readonly closed = new AbortController();
  private readonly gaugeLabels = new Set<string>();
  private readonly orgGaugeLabels = new Set<string>();
  private readonly share: ShareLimits;
  private state: PoolState = 'open';
  private closing: Promise<void> | undefined;
  private readonly reaper: NodeJS.Timeout;

  constructor(deps: PoolDeps) {
    this.deps = deps;
    this.log = deps.log.child({ mod: 'pool' });
    const c = deps.config;
    this.share = shareLimits(c.maxSessions, { orgCap: c.orgMaxSessions, reservePercent: c.orgReservePercent, floor: 1 });
    this.reaper = setInterval(() => this.reap(), deps.config.reapIntervalMs);
    this.reaper.unref();
  }

  static keyOf(server: string, rootId: string, workspace: string, generation = '', purpose = ''): string {
    return `${server}\u0000${rootId}\u0000${workspace}\u0000${generation}\u0000${purpose}`;
  }

  get size(): number {
    return this.sessions.size;
  }

  /** Select or create the session and lease it, in one synchronous step. */
  acquire(spec: SessionSpec): Lease {
    if (this.state !== 'open') throw errors.shuttingDown('lspd is shutting down.');
    const key = SessionPool.keyOf(spec.row.name, spec.rootId, spec.workspace, spec.generation, spec.purpose);
    const now = Date.now();
    let s = this.sessions.get(key);
    if (s && (s.state.kind === 'failed' || s.state.kind === 'stopped')) {
      this.sessions.delete(key);
      s = undefined;
    }
    if (!s) {
      const b = this.backoffs.get(key);
      if (b && now < b.until) {
        throw errors.serverUnavailable(
          `${spec.row.name} failed to start ${b.failures} time(s) in a row (${b.lastError}); it is retried after a back-off.`,
          Math.max(1, Math.ceil((b.until - now) / 1000)),
        );
      }
    }
    if (s) this.maybeRecycle(key, s, spec, now);
    if (!s || s.leases === 0) this.admit(orgOfRoot(spec.rootId));
    if (!s) {
      if (this.sessions.size >= this.deps.config.maxSessions && !this.evictOneIdle()) {
        throw errors.busy(`All ${this.deps.config.maxSessions} language-server sessions are in use.`, 5);
      }
      s = this.spawn(key, spec);
    }
    const session = s;
    session.foreground();
    session.leases++;
    session.lastUsed = now;
    let released = false;
    return {
      session,
      release: () => {
        if (released) return;
        released = true;
        session.leases--;
        session.lastUsed = Date.now();
        if (session.leases === 0 && this.draining.delete(session)) this.retireKey(key, session, 'replaced');
      },
    };
  }

  private spawn(key: string, spec: SessionSpec): Session {
    const s = this.newSession(key, spec);
    this.sessions.set(key, s);
    this.retireOlderCommits(s);
    this.updateGauge();
    return s;
  }

  /**
   * A session of a newer commit started: the same server on the same workspace of
   * older commits of the repo is what it supersedes. Their idle sessions past
   * repoSessionsKept (this one included; the most recently used kept: a review bot
   * may still ask about the base) are stopped now, not when the pool is full, so ten
   * pushes of one repo hold about two commits' memory, not ten. Leased ones serve on.
   * One no query ever leased was only a warm-up's guess about the older commit: it
   * goes whatever repoSessionsKept says (bench/monorepo on playwright: two commits'
   * clangd, pyright and bash, warmed and never asked, made ten commits 2.1-2.4x one's).
   */
  private retireOlderCommits(fresh: Session): void {
    const repo = repoOfRoot(fresh.key.rootId);
    const older: [string, Session][] = [];
    for (const e of this.sessions) {
      const s = e[1];
      if (s === fresh || s.key.server !== fresh.key.server || s.key.workspace !== fresh.key.workspace || s.key.purpose !== fresh.key.purpose) continue;
      if (s.key.rootId !== fresh.key.rootId && repoOfRoot(s.key.rootId) === repo) older.push(e);
    }
    const keep = this.deps.config.repoSessionsKept - 1;
    const asked = older.filter(([, s]) => s.asked).sort((a, b) => b[1].lastUsed - a[1].lastUsed);
    const going = [...older.filter(([, s]) => !s.asked), ...asked.slice(keep)];
    for (const [key, s] of going) if (s.leases === 0) this.retireKey(key, s, s.asked ? 'older commit' : 'older commit, never asked');
  }

  /** A session for `key`, not yet in the map (spawn puts it there; a successor goes there once ready). */
  private newSession(key: string, spec: SessionSpec): Session {
    const s = new Session({
      row: spec.row,
      key: { server: spec.row.name, rootId: spec.rootId, workspace: spec.workspace, ...(spec.purpose ? { purpose: spec.purpose } : {}) },
      org: orgOfRoot(spec.rootId),
      jail: this.deps.jail,
      config: this.deps.config,
      log: this.deps.log,
      metrics: this.deps.metrics,
      treeHostDir: spec.treeHostDir,
      ...(spec.depBinds ? { depBinds: spec.depBinds } : {}),
      ...(spec.depEnv ? { depEnv: spec.depEnv } : {}),
      ...(spec.depSettings ? { depSettings: spec.depSettings } : {}),
      sessionFilesDir: this.deps.sessionFilesDir,
      ...(spec.background ? { background: true } : {}),
    });
    s.onEnd(() => {
      if (this.sessions.get(key) === s) this.sessions.delete(key);
      if (this.successors.get(key) === s) this.successors.delete(key);
      this.updateGauge();
    });
    s.started.then(
      () => {
        this.backoffs.delete(key);
        this.updateGauge();
      },
      (err: unknown) => {
        // A refusal for load (no jail uid for this org now) is no fault of the server: no back-off.
        if (this.state !== 'open' || !(err instanceof SessionFailedError) || err.cause_ === 'stopped' || err.refusal) return;
        const prev = this.backoffs.get(key)?.failures ?? 0;
        const failures = prev + 1;
        const delay = Math.min(this.deps.config.spawnBackoffMaxMs, 1000 * 2 ** (failures - 1));
        this.backoffs.set(key, { failures, until: Date.now() + delay, lastError: err.message });
        this.deps.metrics.restarts.inc({ server: spec.row.name, reason: 'spawn_failed' });
        this.log.warn({ server: spec.row.name, root: spec.rootId, failures, backoffMs: delay }, 'session failed to start, backing off');
      },
    );
    return s;
  }

  /** Why `s` should be replaced now ('requests' or 'memory'), if it should. Memory is read at most once a second. */
  private recycleReason(s: Session, now: number): 'requests' | 'memory' | undefined {
    const c = this.deps.config;
    const check = this.recycleChecks.get(s) ?? { notBefore: 0, memoryReadAt: 0 };
    this.recycleChecks.set(s, check);
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

  /** Start a successor for `old` when it is past a threshold and the pool has room for both. */
  private maybeRecycle(key: string, old: Session, spec: SessionSpec, now: number): void {
    if (old.state.kind !== 'ready' || this.successors.has(key)) return;
    const why = this.recycleReason(old, now);
    if (!why || this.sessions.size + this.successors.size >= this.deps.config.maxSessions) return;
    const next = this.newSession(key, spec);
    if (old.asked) next.foreground(); // it replaces one queries use: no guess
    this.successors.set(key, next);
    this.deps.metrics.recycles.inc({ server: old.key.server, reason: why });
    this.log.info({ server: old.key.server, root: old.key.rootId, why, requests: old.requests, memoryBytes: old.memoryBytes() }, 'replacing session');
    void this.makeReady(next, old).then(
      () => this.promote(key, next, old),
      (err: unknown) => {
        if (this.successors.get(key) === next) this.successors.delete(key);
        void next.stop();
        // The old one serves on; it is looked at again after a while, not on every query.
        this.recycleChecks.set(old, { notBefore: Date.now() + RECYCLE_RETRY_MS, memoryReadAt: 0 });
        this.log.warn({ server: old.key.server, root: old.key.rootId, err: (err as Error).message }, 'successor session not ready; the old one serves on');
      },
    );
  }

  /** Initialize, then open the document the old session opened first and wait for the row's readiness on it. */
  private async makeReady(next: Session, old: Session): Promise<void> {
    const c = this.deps.config;
    const dl = deadline(this.closed.signal, c.initializeTimeoutMs + c.readyTimeoutMs);
    try {
      await next.whenReady(dl.signal);
      const doc = old.firstDoc;
      if (doc) await next.waitReady(next.open(doc.rel, doc.languageId, doc.text), c.readyTimeoutMs, dl.signal);
    } finally {
      dl.clear();
    }
  }

  /** The successor is ready: new queries get it; the old one stops once no query holds it. */
  private promote(key: string, next: Session, old: Session): void {
    if (this.successors.get(key) !== next) return; // its root was stopped or restarted meanwhile
    this.successors.delete(key);
    const here = this.sessions.get(key);
    if (this.state !== 'open' || next.state.kind !== 'ready' || (here !== old && here !== undefined)) {
      void next.stop();
      return;
    }
    this.sessions.set(key, next);
    next.lastUsed = Date.now();
    if (here === old) {
      if (old.leases === 0) this.retireKey(key, old, 'replaced');
      else this.draining.add(old);
    }
    this.updateGauge();
  }

  /** Stop and forget the successors of a root (stopped, or restarted for its dependencies). */
  private dropSuccessors(rootId: string): Promise<void>[] {
    const stops: Promise<void>[] = [];
    for (const [key, s] of [...this.successors]) {
      if (s.key.rootId !== rootId) continue;
      this.successors.delete(key);
      stops.push(s.stop());
    }
    return stops;
  }

  /** May `org` make one more session busy? Throws 503 busy when not (counted per org). */
  private admit(org: string): void {
    const busy = new Map<string, number>();
    let total = 0;
    for (const s of this.sessions.values()) {
      if (s.leases === 0) continue;
      const o = orgOfRoot(s.key.rootId);
      busy.set(o, (busy.get(o) ?? 0) + 1);
      total++;
    }
    const held = busy.get(org) ?? 0;
    const why = shareVerdict(this.share, held, total, busy.size - (held > 0 ? 1 : 0));
    if (why === undefined) return;
    const { metrics } = this.deps;
    metrics.orgRefusals.inc({ org: metrics.orgLabels.of(org), reason: 'sessions' });
    if (why === 'full') throw errors.busy(`All ${this.deps.config.maxSessions} language-server sessions are in use.`, 5);
    const past = why === 'cap' ? `its limit (${envName('orgMaxSessions')})` : 'its share: the rest is kept for other orgs';
    throw errors.busy(`Org ${org} keeps ${held} language-server sessions busy, ${past}; retry shortly.`, 5);
  }

  /**
   * Start a session for a warm-up (warm-up.ts), or undefined: it exists already,
   * its spawn is backing off, or the pool has no room a query would not miss. A
   * warm session is an idle one (no lease): it never counts against an org's busy
   * share, and a query needing its place evicts it like any idle session. It is
   * never started by evicting one, nor into the pool's reserve of free places.
   */
  warm(spec: SessionSpec): Session | undefined {
    if (this.state !== 'open') return undefined;
    const key = SessionPool.keyOf(spec.row.name, spec.rootId, spec.workspace, spec.generation, spec.purpose);
    if (this.sessions.has(key)) return undefined;
    const b = this.backoffs.get(key);
    if (b && Date.now() < b.until) return undefined;
    if (this.deps.config.maxSessions - this.sessions.size <= Math.max(1, this.share.reserve)) return undefined;
    const s = this.spawn(key, { ...spec, background: true });
    s.warm = 'warming';
    return s;
  }

  /** Stop the least recently used session nobody holds; false when every one is held. */
  private evictOneIdle(): boolean {
    let victim: [string, Session] | undefined;
    for (const e of this.sessions) {
      if (e[1].leases === 0 && (!victim || e[1].lastUsed < victim[1].lastUsed)) victim = e;
    }
    if (!victim) return false;
    this.retireKey(victim[0], victim[1], 'evicted');
    return true;
  }

  private retireKey(key: string, s: Session, why: string): void {
    if (this.sessions.get(key) === s) this.sessions.delete(key);
    this.log.info({ server: s.key.server, root: s.key.rootId, why }, 'stopping session');
    const p = s.stop().finally(() => {
      this.stopping.delete(p);
      this.updateGauge();
    });
    this.stopping.add(p);
    this.updateGauge();
  }

  /** Stop sessions idle past idleTimeoutMs. Never one with a lease. */
  reap(now = Date.now()): number {
    let n = 0;
    for (const [key, s] of [...this.sessions]) {
      if (s.leases > 0) continue;
      const dead = s.state.kind === 'failed' || s.state.kind === 'stopped';
      if (dead || now - s.lastUsed >= this.deps.config.idleTimeoutMs) {
        this.retireKey(key, s, dead ? 'dead' : 'idle');
        n++;
      }
    }
    return n;
  }

  /** Is a query holding a session on this root (so eviction must not take it)? */
  holds(rootId: string): boolean {
    for (const s of this.sessions.values()) if (s.key.rootId === rootId && s.leases > 0) return true;
    return false;
  }

  /** The root was deleted or evicted: stop its sessions (queries on them fail). */
  async stopRoot(rootId: string): Promise<void> {
    const stops: Promise<void>[] = [];
    for (const [key, s] of [...this.sessions]) {
      if (s.key.rootId !== rootId) continue;
      this.sessions.delete(key);
      stops.push(s.stop());
    }
    for (const s of [...this.draining]) {
      if (s.key.rootId !== rootId) continue;
      this.draining.delete(s);
      stops.push(s.stop());
    }
    stops.push(...this.dropSuccessors(rootId));
    for (const key of [...this.backoffs.keys()]) if (key.includes(`\u0000${rootId}\u0000`)) this.backoffs.delete(key);
    this.updateGauge();
    await Promise.all(stops);
  }

  /**
   * The root's dependencies changed (its fetch finished): take its sessions out of
   * the map so the next query spawns ones that see them, and stop each once no
   * query holds it (a query already running finishes on the old one).
   */
  restartRoot(rootId: string, which: (s: Session) => boolean = () => true): number {
    let n = 0;
    // A successor started before the fetch ended lacks what it brought.
    for (const p of this.dropSuccessors(rootId)) {
      const q: Promise<void> = p.finally(() => this.stopping.delete(q));
      this.stopping.add(q);
    }
    for (const [key, s] of [...this.sessions]) {
      if (s.key.rootId !== rootId || !which(s)) continue;
      this.sessions.delete(key);
      n++;
      this.deps.metrics.restarts.inc({ server: s.key.server, reason: 'dependencies' });
      if (s.leases === 0) this.retireKey(key, s, 'dependencies fetched');
      else this.draining.add(s);
    }
    this.updateGauge();
    return n;
  }

  /** The root's sessions, for GET /v1/roots/{...}. */
  sessionsOf(rootId: string): { server: string; workspace: string; state: string; documents: number }[] {
    const out: { server: string; workspace: string; state: string; documents: number }[] = [];
    for (const s of [...this.sessions.values(), ...this.successors.values()]) {
      // A warm-up's session (and a recycled session's successor) says 'warming' until the warm-up drove it to readiness.
      if (s.key.rootId === rootId)
        out.push({
          server: s.key.server,
          workspace: s.key.workspace,
          state: (s.warm === 'warming' || this.isSuccessor(s)) && (s.state.kind === 'starting' || s.state.kind === 'ready') ? 'warming' : s.state.kind,
          documents: s.openDocuments,
        });
    }
    return out;
  }

  private isSuccessor(s: Session): boolean {
    for (const x of this.successors.values()) if (x === s) return true;
    return false;
  }

  /** Every session in the map (tests and metrics). */
  list(): Session[] {
    return [...this.sessions.values()];
  }

  /** Shut every session down (bounded per session). Once; concurrent callers wait for the same close. */
  close(): Promise<void> {
    this.closing ??= this.doClose();
    return this.closing;
  }

  private async doClose(): Promise<void> {
    this.state = 'closing';
    clearInterval(this.reaper);
    this.closed.abort();
    const all = [...this.sessions.values(), ...this.draining, ...this.successors.values()];
    this.successors.clear();
    this.sessions.clear();
    this.draining.clear();
    await Promise.all([...all.map((s) => s.stop()), ...this.stopping]);
    this.state = 'closed';
    this.updateGauge();
  }

  private updateGauge(): void {
    const counts = new Map<string, number>();
    for (const s of this.sessions.values()) {
      const k = `${s.key.server}\u0000${s.state.kind}`;
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    for (const k of counts.keys()) this.gaugeLabels.add(k);
    for (const k of this.gaugeLabels) {
      const [server, state] = k.split('\u0000') as [string, string];
      this.deps.metrics.sessions.set({ server, state }, counts.get(k) ?? 0);
    }
    const perOrg = new Map<string, number>();
    for (const s of this.sessions.values()) {
      const o = orgOfRoot(s.key.rootId);
      perOrg.set(o, (perOrg.get(o) ?? 0) + 1);
    }
    const { orgLabels, orgSessions } = this.deps.metrics;
    for (const [org, n] of orgLabels.fold(perOrg, this.orgGaugeLabels)) orgSessions.set({ org }, n);
  }
}

/** After a successor failed to become ready, how long the old session serves before recycling is tried again. */
const RECYCLE_RETRY_MS = 30_000;

/** A root id is `org/repo/sha`. */
/** `org/repo` of a root id (`org/repo/sha`). */
function repoOfRoot(rootId: string): string {
  return rootId.slice(0, rootId.lastIndexOf('/'));
}

function orgOfRoot(rootId: string): string {
  const i = rootId.indexOf('/');
  return i < 0 ? rootId : rootId.slice(0, i);
}
