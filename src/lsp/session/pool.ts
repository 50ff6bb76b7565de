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
// Recycling a session past a threshold through a successor readied out of the map:
// recycle.ts; the old one, like a session restartRoot took, drains.
import { envName, type Config } from '../../config.js';
import { errors } from '../../errors.js';
import { shareLimits, shareVerdict, type ShareLimits } from '../../tenancy/fair-share.js';
import type { Logger } from '../../log.js';
import type { Metrics } from '../../metrics.js';
import type { Bind, Jail } from '../../jail/types.js';
import type { ServerRow } from '../servers/server-row.js';
import { Recycler } from './recycle.js';
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
  private readonly closed = new AbortController();
  private readonly recycler: Recycler;
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
    this.recycler = new Recycler({
      ...deps,
      log: this.log,
      closed: this.closed.signal,
      sessionCount: () => this.sessions.size,
      newSession: (key, spec) => this.newSession(key, spec),
      adopt: (key, next, old) => this.adopt(key, next, old),
    });
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
    if (s) this.recycler.maybeRecycle(key, s, spec, now);
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
    const pool = this; // release is a method, not an arrow: no name defined per lease (util/deadline.ts)
    return {
      session,
      release() {
        if (released) return;
        released = true;
        session.leases--;
        session.lastUsed = Date.now();
        if (session.leases === 0 && pool.draining.delete(session)) pool.retireKey(key, session, 'replaced');
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
      this.recycler.forget(key, s);
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

  /** A recycled session's successor is ready: new queries get it; the old one stops once no query holds it. */
  private adopt(key: string, next: Session, old: Session): void {
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
    stops.push(...this.recycler.drop(rootId));
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
    for (const p of this.recycler.drop(rootId)) {
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
    for (const s of [...this.sessions.values(), ...this.recycler.list()]) {
      // A warm-up's session (and a recycled session's successor) says 'warming' until the warm-up drove it to readiness.
      if (s.key.rootId === rootId)
        out.push({
          server: s.key.server,
          workspace: s.key.workspace,
          state: (s.warm === 'warming' || this.recycler.isSuccessor(s)) && (s.state.kind === 'starting' || s.state.kind === 'ready') ? 'warming' : s.state.kind,
          documents: s.openDocuments,
        });
    }
    return out;
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
    const all = [...this.sessions.values(), ...this.draining, ...this.recycler.takeAll()];
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

/** `org/repo` of a root id (`org/repo/sha`). */
function repoOfRoot(rootId: string): string {
  return rootId.slice(0, rootId.lastIndexOf('/'));
}

function orgOfRoot(rootId: string): string {
  const i = rootId.indexOf('/');
  return i < 0 ? rootId : rootId.slice(0, i);
}
