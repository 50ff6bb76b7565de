// Base reuse, the fetch manager's second job kept out of fetch-manager.ts: before a
// job queues (holding no slot), each unit of its workspaces that an earlier root of
// the org and repo fetched with the same inputs is linked from it (donors.ts picks
// whom, fetch-reuse.ts links, borrow.ts serves the donors' own dirs until the copy
// lands); what is left queues, or the job settles done when nothing is. A composed
// root's base (`?base=`) is tried first and, while its fetch runs, waited for when it
// would give something; other roots count once settled. When a donor goes, the heads
// that borrow its dirs get their own copies first and their sessions are restarted.
import { rootId, type RootKey } from '../store/types.js';
import { borrowedMounts, type Borrowing } from './borrow.js';
import { Donors, linkDonations, markLinked } from './donors.js';
import { FetchAbort, serveMounts, type FetchJob } from './fetch-job.js';
import type { ReuseCandidate } from './fetch-reuse.js';
import type { Logger } from '../log.js';
import type { FetchStore, FetchView, StepStatus } from './types.js';

/** What base reuse reads of the fetch manager and asks of it. */
export interface ReuseHost {
  store: Pick<FetchStore, 'treeDir' | 'depsDir'>;
  log: Logger;
  closed(): boolean;
  /** Every root's job. */
  jobs(): Iterable<{ key: RootKey; job: FetchJob }>;
  job(key: RootKey): FetchJob | undefined;
  wait(key: RootKey, signal: AbortSignal): Promise<unknown>;
  /** The root's state-file write in flight, if any. */
  written(key: RootKey): Promise<void> | undefined;
  /** Queue what linking left to fetch. */
  queue(key: RootKey): void;
  notifyDone(key: RootKey, view: FetchView): void;
  wake(id: string): void;
  persist(key: RootKey, job: FetchJob): Promise<void>;
  /** Awaited before a borrowing head's own copy is made (FetchManager.copyGate). */
  copyGate(key: RootKey): Promise<void>;
}

export class BaseReuse {
  /** Composed roots: the base whose workspaces they link first, waited for while its fetch runs (fetch-reuse.ts). */
  private readonly reuseFrom = new Map<string, RootKey>();
  private readonly donors: Donors;
  /** Jobs linking earlier roots' workspaces before they queue (no slot held): cancel and close stop them. */
  private readonly linking = new Map<string, { abort: AbortController; done: Promise<void> }>();
  /** Heads served from earlier roots' dirs, by head id (borrow.ts); kept until those roots go. */
  private readonly borrowing = new Map<string, Borrowing>();

  constructor(private readonly host: ReuseHost) {
    this.donors = new Donors({
      treeDir: (k) => host.store.treeDir(k),
      depsDir: (k) => host.store.depsDir(k),
      jobs: () => host.jobs(),
      job: (k) => host.job(k),
      wait: (k, signal) => host.wait(k, signal),
      written: (k) => host.written(k),
    });
  }

  /** An upload composed on a base of the same org and repo: its workspaces are tried first. */
  expect(key: RootKey, reuse: ReuseCandidate | undefined): void {
    if (reuse && reuse.base.org === key.org && reuse.base.repo === key.repo) this.reuseFrom.set(rootId(key), reuse.base);
  }

  /** Start linking the queued job's workspaces, when something could give them; false: queue it now. */
  start(key: RootKey, job: FetchJob): boolean {
    const id = rootId(key);
    const earlier = [...this.host.jobs()].some(
      ({ key: k, job: j }) => k.org === key.org && k.repo === key.repo && k.sha !== key.sha && (j.state.name === 'done' || j.state.name === 'failed'),
    );
    if (!this.reuseFrom.has(id) && !earlier) return false;
    const abort = new AbortController();
    const done = this.linkEarlier(key, job, abort.signal)
      .catch((err: unknown) => this.host.log.warn({ err, root: id }, 'fetch reuse failed; fetching'))
      .finally(() => {
        this.linking.delete(id);
        if (this.host.closed() || this.host.job(key) !== job || job.state.name !== 'queued') return;
        if (job.state.steps.some((s) => s.state === 'queued')) this.host.queue(key);
      });
    this.linking.set(id, { abort, done });
    return true;
  }

  /** Deps dirs of the roots this one's binds borrow now (borrow.ts): answers name their files as this root's own. */
  lentDeps(key: RootKey): string[] {
    const b = this.borrowing.get(rootId(key));
    return b && b.until === undefined ? [...b.donors.values()].map((k) => this.host.store.depsDir(k)) : [];
  }

  /** The root is going: forget it, give its borrowers their copies, stop its linking. */
  async cancel(key: RootKey): Promise<void> {
    const id = rootId(key);
    this.reuseFrom.delete(id);
    this.donors.forget(key);
    this.borrowing.delete(id);
    await this.returnBorrowed(key);
    const linking = this.linking.get(id);
    if (linking) {
      linking.abort.abort(new FetchAbort('cancelled'));
      await linking.done;
    }
  }

  async close(): Promise<void> {
    for (const l of this.linking.values()) l.abort.abort(new FetchAbort('shutdown'));
    await Promise.allSettled([...this.linking.values()].map((l) => l.done));
  }

  private async linkEarlier(key: RootKey, job: FetchJob, signal: AbortSignal): Promise<void> {
    const { host } = this;
    const id = rootId(key);
    const q = job.state;
    if (q.name !== 'queued') return;
    const base = this.reuseFrom.get(id);
    this.reuseFrom.delete(id);
    const found = await this.donors.find(key, q.steps, base, signal);
    if (found.length === 0 || signal.aborted || host.job(key) !== job) return;
    const depsDir = host.store.depsDir(key);
    const treeDir = host.store.treeDir(key);
    const donors = [...new Set(found.map((f) => f.donor.sha))];
    // Served from the donors' own dirs at once (borrow.ts), before our copy is made.
    const borrowed = await borrowedMounts(treeDir, found, (k) => host.store.depsDir(k));
    if (signal.aborted || host.job(key) !== job) return;
    const given = new Set(found.flatMap((f) => f.unit));
    const queued = q.steps.filter((s) => s.state === 'queued').length;
    // Mounts first, then every change below in one turn: a query must never see a
    // workspace done (so not waited for) whose mounts are not published yet.
    const linked = markLinked(found);
    q.early = borrowed;
    let settle!: () => void;
    const lent: Borrowing = {
      head: key,
      donors: new Map(found.map((f) => [rootId(f.donor), f.donor])),
      steps: linked.map(({ reused: _r, ...s }) => s),
      copy: new Promise<void>((r) => (settle = r)),
    };
    this.borrowing.set(id, lent);
    host.log.info({ root: id, from: donors, workspaces: linked.length }, 'fetch reused');
    // Sessions started before this lack the mounts: the listeners restart them (reused
    // steps, named without `reused`, count as fetched for this one event).
    host.notifyDone(key, { state: 'done', ecosystems: lent.steps, finishedAt: new Date().toISOString() });
    host.wake(id);
    try {
      await host.copyGate(key);
      await linkDonations(found, depsDir, (k) => host.store.depsDir(k), queued);
    } catch (err) {
      // Fetched for real instead; sessions that bind the donors' dirs are restarted at that fetch's end.
      for (const s of given) {
        s.state = 'queued';
        delete s.reused;
        delete s.skipped;
      }
      q.early = [];
      throw err;
    } finally {
      lent.until = Date.now();
      settle();
    }
    const asDone = (steps: StepStatus[]) => steps.map((s) => (given.has(s) ? { ...s, state: 'done' as const } : s));
    const early = await serveMounts(treeDir, depsDir, asDone([...given]));
    const mounts = await serveMounts(treeDir, depsDir, asDone(q.steps));
    if (signal.aborted || host.job(key) !== job) return;
    // Our copy replaces the donors' dirs for sessions started from now on; no restart:
    // the same files (hard links of the same inodes) at the same places.
    const finished = new Date().toISOString();
    if (q.steps.every((s) => s.state !== 'queued')) {
      const bytes = donors.length === 1 ? (this.settledState(found[0]!.donor)?.bytes ?? 0) : 0;
      job.to({ name: 'running', startedAt: finished, abort: new AbortController(), steps: q.steps, attempt: q.attempt });
      job.to({ name: 'done', steps: q.steps, attempt: q.attempt, startedAt: finished, finishedAt: finished, bytes, log: linkedLog(q.steps), mounts });
    } else q.early = early;
    // Told with nothing fetched, so no session restarts; the store measures the copy
    // once the state file is written (queued first, as at a fetch's end).
    const written = host.persist(key, job);
    host.notifyDone(key, { state: 'done', ecosystems: [], finishedAt: finished });
    host.wake(id);
    await written;
  }

  /**
   * A root is going: the heads that borrow its dirs (borrow.ts) get their own copies
   * first, and their sessions started before that are restarted, since they bind
   * the dirs about to be removed.
   */
  private async returnBorrowed(donor: RootKey): Promise<void> {
    const id = rootId(donor);
    for (const [headId, lent] of [...this.borrowing]) {
      if (!lent.donors.has(id)) continue;
      await lent.copy;
      this.borrowing.delete(headId);
      if (!this.host.job(lent.head)) continue;
      // A session started in the same ms as the copy landed counts as one that borrowed.
      const finishedAt = new Date((lent.until ?? Date.now()) + 1).toISOString();
      this.host.notifyDone(lent.head, { state: 'done', ecosystems: lent.steps, finishedAt });
    }
  }

  private settledState(key: RootKey): { bytes?: number } | undefined {
    const s = this.host.job(key)?.state;
    return s && (s.name === 'done' || s.name === 'failed') ? s : undefined;
  }
}

/** The log lines that say which workspaces were linked, and from where. */
export function linkedLog(steps: readonly StepStatus[]): string {
  return steps
    .filter((s) => s.reused !== undefined)
    .map((s) => `lspd: ${s.ecosystem} ${s.dir || '.'}: dependencies linked from ${s.reused}: the same lockfiles and manifests\n`)
    .join('');
}
