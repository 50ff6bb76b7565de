// The FETCH phase as the rest of lspd sees it: one job per root, queued after
// upload and run in the background, at most LSPD_FETCH_SLOTS at a time.
//
// - States per root: none | queued | running | done | failed | refused (types.ts),
//   persisted as <deps>/fetch.json on every change, written by rename so a crash
//   leaves the old or the new file. At the next start `resume` re-queues a job a
//   crash interrupted, once; interrupted twice, it is marked failed (a fetch that
//   takes the daemon down must not do so at every start).
// - Fair between orgs: the queue hands out jobs round-robin between orgs, and an
//   org runs at most its share of the slots (src/fair-share.ts), so one org's
//   hundred uploads delay another org's first fetch by at most one job.
// - Bounded: each job has a deadline (fetchTimeoutMs; aborting kills the jail) and
//   a byte bound on the deps dir (fetchMaxBytes; see fetch-job.ts for how).
// - Root removal cancels its job (queued: dropped; running: the jail is killed).
// - Sessions ask for the SERVE-side binds and env (serveBinds/serveEnv), wait for a
//   running fetch within their query budget (wait), and restart what they started
//   before a fetch finished (onDone).
import { mkdir } from 'node:fs/promises';
import type { Config } from '../config.js';
import { FairShare, OrgQueue, shareLimits } from '../fair-share.js';
import type { Bind, Jail } from '../jail/types.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { rootId, type RootKey } from '../store/types.js';
import { defaultDetectLimits, detect, type DetectLimits } from './ecosystems.js';
import { readStateFile, writeStateFile, type StateFile } from './state-file.js';
import { FetchAbort, FetchJob, abortCause, initialSteps, runJob, serveMounts, type JobState, type RunResult } from './fetch-job.js';
import { coveredSteps, dropReuse, fetchInputsDigest, linkBaseDeps, touchesFetchInputs, type ReuseCandidate } from './fetch-reuse.js';
import { goServeEnv } from './go.js';
import type { ServeMount } from './step.js';
import type { Ecosystem, FetchStore, FetchView, StepStatus, Toolchains } from './types.js';
import { GOPATH_AT } from '../jail/layout.js';

export interface FetchManagerOptions {
  config: Pick<
    Config,
    | 'fetchTimeoutMs'
    | 'fetchSlots'
    | 'fetchMaxBytes'
    | 'goProxy'
    | 'npmRegistry'
    | 'pipIndexUrl'
    | 'composerRepo'
    | 'dataDir'
    | 'stderrRingBytes'
    | 'orgMaxFetches'
    | 'orgReservePercent'
  >;
  log: Logger;
  metrics: Pick<Metrics, 'fetchSeconds'>;
  jail: Jail;
  store: FetchStore;
  /** Pinned toolchains (in-jail paths); an absent one makes its ecosystem refused. */
  tools: Toolchains;
  /**
   * Whether jobs may start (main.ts: the FETCH canary passed). While false, jobs
   * stay queued rather than fail on a jail that is not proved; call `resume` once it
   * turns true to start them.
   */
  ready?: () => boolean;
  /** Bytes of fetcher output kept per root for GET /v1/roots. */
  logTailBytes?: number;
  /** Smallest interval between two measurements of the deps dir while a job runs. */
  byteCheckIntervalMs?: number;
  detectLimits?: DetectLimits;
}

const MAX_ATTEMPTS = 2;

export class FetchManager {
  private readonly jobs = new Map<string, { key: RootKey; job: FetchJob }>();
  /** Root ids of queued jobs, per org. */
  private readonly queue = new OrgQueue<string>();
  private readonly running = new Map<string, Promise<void>>();
  /** Running jobs per org. */
  private readonly slots: FairShare;
  private readonly pendingEnqueue = new Map<string, Promise<FetchView>>();
  private readonly doneListeners = new Set<(key: RootKey, view: FetchView) => void>();
  private readonly settleWaiters = new Map<string, Set<() => void>>();
  private readonly writes = new Map<string, Promise<void>>();
  /** Composed roots whose layer touched no fetch input: the base whose finished fetch they may link (fetch-reuse.ts). */
  private readonly reuseFrom = new Map<string, RootKey>();
  /** Each root's fetch-inputs digest (fetch-reuse.ts), computed once: roots are immutable. */
  private readonly digests = new Map<string, Promise<string | undefined>>();
  private closed = false;
  private readonly concurrency: number;
  private readonly log: Logger;

  constructor(private readonly o: FetchManagerOptions) {
    // One slot let one org's fetch (up to its deadline) hold every other org's new
    // roots; with two or more, the fair share keeps one for an org that arrives.
    this.concurrency = o.config.fetchSlots;
    this.slots = new FairShare(shareLimits(this.concurrency, { orgCap: o.config.orgMaxFetches, reservePercent: o.config.orgReservePercent, floor: 1 }));
    this.log = o.log;
    // The store awaits this before it deletes the files: no jail still writes them.
    o.store.onRemove((key) => this.cancel(key));
  }

  /**
   * After an upload: detect what the tree needs and queue it. Idempotent: a root
   * that already has a job answers that job's view. Resolves with the state the
   * PUT answer shows ('queued', 'none' or 'refused'). `reuse`: the root was
   * composed on a base; when nothing a fetcher reads changed, its job links the
   * base's finished fetch instead of fetching.
   */
  enqueue(key: RootKey, reuse?: ReuseCandidate): Promise<FetchView> {
    const id = rootId(key);
    if (reuse && !touchesFetchInputs(reuse.changed)) this.reuseFrom.set(id, reuse.base);
    const have = this.jobs.get(id);
    if (have) return Promise.resolve(have.job.view());
    let p = this.pendingEnqueue.get(id);
    if (!p) {
      p = this.detectAndQueue(key, 1).finally(() => this.pendingEnqueue.delete(id));
      this.pendingEnqueue.set(id, p);
    }
    return p;
  }

  /** The fetch state of a root ('none' when lspd has no job for it). */
  state(key: RootKey): FetchView {
    return this.jobs.get(rootId(key))?.job.view() ?? { state: 'none' };
  }

  /** True while a fetch runs for the root: the store should not evict it (compose into its hold check). */
  busy(key: RootKey): boolean {
    return this.jobs.get(rootId(key))?.job.state.name === 'running';
  }

  /** One ecosystem's steps for a root, so an answer can say e.g. that Python dependencies were not fetched. */
  ecosystemStatus(key: RootKey, ecosystem: Ecosystem): StepStatus[] {
    return (this.state(key).ecosystems ?? []).filter((s) => s.ecosystem === ecosystem);
  }

  /**
   * Resolve once the root's fetch is settled, or when `signal` aborts (a query's
   * budget), whichever is first; either way with the view at that moment. The
   * caller answers 503 fetch_running when it is still queued or running.
   */
  async wait(key: RootKey, signal?: AbortSignal): Promise<FetchView> {
    const id = rootId(key);
    await this.pendingEnqueue.get(id)?.catch(() => undefined);
    const entry = this.jobs.get(id);
    if (!entry || entry.job.settled || signal?.aborted) return this.state(key);
    await new Promise<void>((resolve) => {
      const waiters = this.settleWaiters.get(id) ?? new Set();
      this.settleWaiters.set(id, waiters);
      const done = () => {
        waiters.delete(done);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      waiters.add(done);
      signal?.addEventListener('abort', done, { once: true });
    });
    return this.state(key);
  }

  /** Told when a queued or running job ends done or failed. Returns the unsubscribe. */
  onDone(listener: (key: RootKey, view: FetchView) => void): () => void {
    this.doneListeners.add(listener);
    return () => this.doneListeners.delete(listener);
  }

  /**
   * Read-only binds a SERVE jail of this root needs for its dependencies: the Go
   * module cache at /deps/go/pkg/mod, and each npm workspace's node_modules over
   * `<treeAt>/<workspace>/node_modules`. Bind them after the tree (they mount
   * inside it). Empty until a fetch finished; every source was checked to be a
   * plain directory after the jail that wrote it had exited.
   */
  serveBinds(key: RootKey, treeAt: string): Bind[] {
    const s = this.jobs.get(rootId(key))?.job.state;
    const mounts: ServeMount[] = s && (s.name === 'done' || s.name === 'failed') ? s.mounts : [];
    return mounts.map((m) => ({ host: m.host, at: m.treeRel ? `${treeAt}/${m.at}` : m.at }));
  }

  /** Dependency-related environment for a SERVE jail of this root running `ecosystem`'s server. */
  serveEnv(key: RootKey, ecosystem: Ecosystem): Record<string, string> {
    if (ecosystem !== 'go') return {};
    return goServeEnv(this.serveBinds(key, '/').some((b) => b.at.startsWith(`${GOPATH_AT}/`)));
  }

  /**
   * At start (call it once the FETCH jail is proved; again later is harmless and
   * starts whatever is queued): load each stored root's state file. A job a crash interrupted is
   * re-queued (attempt+1) or, past MAX_ATTEMPTS, marked failed; a root with no
   * state file (the crash came between its upload and its enqueue) is detected anew.
   */
  async resume(keys: Iterable<RootKey>): Promise<void> {
    for (const key of keys) {
      const id = rootId(key);
      if (this.jobs.has(id) || this.closed) continue;
      const saved = await readStateFile(this.o.store.depsDir(key));
      if (!saved) {
        await this.enqueue(key);
        continue;
      }
      const { view, attempt } = saved;
      if (view.state === 'queued' || view.state === 'running') {
        if (attempt >= MAX_ATTEMPTS) {
          const steps = (view.ecosystems ?? []).map((s) =>
            s.state === 'queued' || s.state === 'running' ? { ...s, state: 'failed' as const, reason: 'interrupted by daemon restarts' } : s,
          );
          this.settle(
            key,
            new FetchJob({
              name: 'failed',
              error: `the fetch was interrupted by a daemon restart ${attempt} times`,
              finishedAt: new Date().toISOString(),
              log: '',
              mounts: await this.mountsOf(key, steps),
              steps,
              attempt,
            }),
          );
        } else {
          const steps = (view.ecosystems ?? []).map((s) => (s.state === 'running' ? { ...s, state: 'queued' as const } : s));
          this.add(key, new FetchJob({ name: 'queued', steps, attempt: attempt + 1 }));
          this.log.info({ root: id, attempt: attempt + 1 }, 'fetch re-queued after restart');
        }
        continue;
      }
      this.jobs.set(id, { key, job: new FetchJob(await this.restore(key, view, attempt)) });
    }
    this.pump();
  }

  /** Drop a root's job: queued ones never run, a running one's jail is killed. Resolves when it has stopped. */
  async cancel(key: RootKey): Promise<void> {
    const id = rootId(key);
    await this.pendingEnqueue.get(id)?.catch(() => undefined);
    this.reuseFrom.delete(id);
    this.digests.delete(id);
    const entry = this.jobs.get(id);
    if (!entry) return;
    this.jobs.delete(id);
    const s = entry.job.state;
    if (s.name === 'queued') {
      entry.job.to({ name: 'cancelled' });
      this.queue.remove(key.org, id);
    } else if (s.name === 'running') {
      s.abort.abort(new FetchAbort('cancelled'));
      await this.running.get(id);
    }
    this.wake(id);
  }

  /**
   * Shutdown: stop starting jobs, kill the running ones' jails and wait for them.
   * Their state files still say queued/running, so the next start resumes them.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const { job } of this.jobs.values()) {
      const s = job.state;
      if (s.name === 'running') s.abort.abort(new FetchAbort('shutdown'));
    }
    await Promise.allSettled([...this.running.values()]);
  }

  // --- internals -------------------------------------------------------------

  private async detectAndQueue(key: RootKey, attempt: number): Promise<FetchView> {
    const plan = await detect(this.o.store.treeDir(key), this.o.tools, this.o.detectLimits ?? defaultDetectLimits);
    const steps = initialSteps(plan);
    let job: FetchJob;
    if (plan.length === 0) job = new FetchJob({ name: 'none' });
    else if (plan.every((p) => p.action === 'refuse')) {
      job = new FetchJob({
        name: 'refused',
        error: steps
          .map((s) => s.reason)
          .filter((r, i, a) => a.indexOf(r) === i)
          .join(' '),
        steps,
        attempt: 0,
      });
    } else job = new FetchJob({ name: 'queued', steps, attempt });
    if (this.closed) return job.view();
    if (job.state.name === 'queued') this.add(key, job);
    else this.jobs.set(rootId(key), { key, job });
    await this.persist(key, job);
    // The view before pump(): the PUT answer says queued even when a slot is free
    // and the job starts at once.
    const view = job.view();
    this.pump();
    return view;
  }

  private add(key: RootKey, job: FetchJob): void {
    const id = rootId(key);
    this.jobs.set(id, { key, job });
    this.queue.push(key.org, id);
  }

  private pump(): void {
    if (this.o.ready && !this.o.ready()) return;
    while (!this.closed && this.running.size < this.concurrency) {
      const next = this.queue.next((org) => this.slots.check(org) === undefined);
      if (!next) break;
      const { org, item: id } = next;
      const entry = this.jobs.get(id);
      if (!entry || entry.job.state.name !== 'queued') continue;
      this.slots.take(org);
      const p = this.run(entry.key, entry.job).catch((err: unknown) => this.log.error({ err, root: id }, 'fetch job crashed'));
      this.running.set(
        id,
        p.finally(() => {
          this.running.delete(id);
          this.slots.give(org);
          this.pump();
        }),
      );
    }
  }

  private async run(key: RootKey, job: FetchJob): Promise<void> {
    const id = rootId(key);
    const q = job.state;
    if (q.name !== 'queued') return;
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new FetchAbort('timeout')), this.o.config.fetchTimeoutMs);
    const startedAt = new Date().toISOString();
    job.to({ name: 'running', startedAt, abort, steps: q.steps, attempt: q.attempt });
    const depsDir = this.o.store.depsDir(key);
    const treeDir = this.o.store.treeDir(key);
    this.log.info({ root: id, attempt: q.attempt }, 'fetch started');
    try {
      await mkdir(depsDir, { recursive: true });
      await this.persist(key, job);
      const result =
        (await this.shareBase(key, q.steps, abort.signal)) ??
        (await runJob(
          { jail: this.o.jail, log: this.log, metrics: this.o.metrics },
          {
            org: key.org,
            ctx: {
              treeDir,
              depsDir,
              goProxy: this.o.config.goProxy,
              npmRegistry: this.o.config.npmRegistry,
              pipIndexUrl: this.o.config.pipIndexUrl,
              composerRepo: this.o.config.composerRepo,
              tools: this.o.tools,
            },
            steps: q.steps,
            signal: abort.signal,
            maxBytes: this.o.config.fetchMaxBytes,
            byteCheckIntervalMs: this.o.byteCheckIntervalMs ?? 1000,
            logTailBytes: this.o.logTailBytes ?? 16 * 1024,
            stderrRingBytes: this.o.config.stderrRingBytes,
            scrub: { [depsDir]: '<deps>', [treeDir]: '<tree>', [this.o.config.dataDir]: '<data>', ...goProxyLabels(this.o.config.goProxy) },
            onStep: () => void this.persist(key, job),
          },
        ));
      if (job.state.name !== 'running') return;
      const cause = result.aborted;
      if (cause === 'shutdown') {
        // Not a crash: written back as queued with the attempt not counted, so the
        // next start resumes it without moving it towards "failed".
        const steps = result.steps.map((st) =>
          st.state === 'running' || st.state === 'skipped' || result.stopped.includes(st)
            ? { ecosystem: st.ecosystem, dir: st.dir, state: 'queued' as const }
            : st,
        );
        await this.persist(key, job, { v: 1, view: { state: 'queued', ecosystems: steps }, attempt: q.attempt - 1 });
        return;
      }
      if (cause === 'cancelled') {
        job.to({ name: 'cancelled' });
        return;
      }
      const finishedAt = new Date().toISOString();
      const failed = result.error !== undefined || result.steps.some((s) => s.state === 'failed');
      const common = { steps: result.steps, attempt: q.attempt, startedAt, finishedAt, bytes: result.bytes, log: result.log, mounts: result.mounts };
      job.to(failed ? { name: 'failed', error: result.error ?? 'a dependency fetch failed', ...common } : { name: 'done', ...common });
      this.log.info({ root: id, state: job.state.name, bytes: result.bytes, error: result.error }, 'fetch finished');
      // The listeners (sessions started without these dependencies are replaced) run in
      // the same turn as the state change: a GET that sees `done`, and any query after
      // it, never meets a session without the fetch. Persisting is after; a crash
      // before it runs the fetch again, which is harmless.
      const view = job.view();
      for (const l of this.doneListeners) {
        try {
          l(key, view);
        } catch (err) {
          this.log.error({ err, root: id }, 'fetch onDone listener threw');
        }
      }
      await this.persist(key, job);
    } catch (err) {
      // An internal error (not a fetcher's failure, which runJob reports): fail the job, say so.
      if (job.state.name === 'running' && abortCause(abort.signal) !== 'shutdown') {
        job.to({
          name: 'failed',
          error: 'internal error while fetching',
          steps: q.steps,
          attempt: q.attempt,
          startedAt,
          finishedAt: new Date().toISOString(),
          log: '',
          mounts: [],
        });
        await this.persist(key, job).catch(() => undefined);
      }
      throw err;
    } finally {
      clearTimeout(timer);
      this.wake(id);
    }
  }

  /**
   * A root whose base's fetch finished (waited for while it runs) and covers its
   * plan gets that fetch as hard links (fetch-reuse.ts); otherwise undefined, and
   * the deps dir is ready for a real fetch.
   */
  private async shareBase(key: RootKey, steps: StepStatus[], signal: AbortSignal): Promise<RunResult | undefined> {
    const id = rootId(key);
    const depsDir = this.o.store.depsDir(key);
    let base = this.reuseFrom.get(id);
    this.reuseFrom.delete(id);
    let why = 'no lockfile or manifest changed';
    if (!base) {
      base = await this.twinOf(key);
      why = 'the same lockfiles and manifests';
    }
    if (base) {
      if (this.jobs.get(rootId(base))?.job.state.name === 'running') await this.wait(base, signal);
      // Linked only once the base's state file says done: a base a crash left "running"
      // would fetch again at the next start, through dirs the head now shares.
      await this.writes.get(rootId(base));
      const b = this.jobs.get(rootId(base))?.job.state;
      const covered = b?.name === 'done' ? coveredSteps(steps, b.steps) : undefined;
      if (b?.name === 'done' && covered && !signal.aborted) {
        try {
          const mounts = await linkBaseDeps(this.o.store.depsDir(base), depsDir, this.o.store.treeDir(key), base.sha, covered);
          this.log.info({ root: id, base: base.sha, why }, 'fetch reused');
          const log = `${b.log}${b.log.endsWith('\n') || b.log === '' ? '' : '\n'}lspd: dependencies linked from ${base.sha}: ${why}\n`;
          return { steps: covered, stopped: [], bytes: b.bytes, log, mounts };
        } catch (err) {
          // The base went away meanwhile, or the disk refused: fetch for real.
          this.log.warn({ err, root: id, base: base.sha }, 'fetch reuse failed; fetching');
        }
      }
    }
    await dropReuse(depsDir);
    return undefined;
  }

  /**
   * A root of the same org and repo whose fetch is done and read exactly what this
   * one's would (same fetch-inputs digest), the most recently finished first;
   * undefined when none. Never another org's or repo's.
   */
  private async twinOf(key: RootKey): Promise<RootKey | undefined> {
    const candidates = [...this.jobs.values()]
      .filter(({ key: k, job }) => k.org === key.org && k.repo === key.repo && k.sha !== key.sha && job.state.name === 'done')
      .sort((a, b) => finishedAt(b.job) - finishedAt(a.job));
    if (candidates.length === 0) return undefined;
    const mine = await this.digestOf(key);
    if (mine === undefined) return undefined;
    for (const c of candidates) if ((await this.digestOf(c.key)) === mine) return c.key;
    return undefined;
  }

  private digestOf(key: RootKey): Promise<string | undefined> {
    const id = rootId(key);
    let d = this.digests.get(id);
    if (!d) {
      d = fetchInputsDigest(this.o.store.treeDir(key)).catch(() => undefined);
      this.digests.set(id, d);
    }
    return d;
  }

  private settle(key: RootKey, job: FetchJob): void {
    this.jobs.set(rootId(key), { key, job });
    void this.persist(key, job);
  }

  private wake(id: string): void {
    for (const w of [...(this.settleWaiters.get(id) ?? [])]) w();
    this.settleWaiters.delete(id);
  }

  /** Write the job's state file; `as` overrides what is written (a shutdown writes queued). */
  private async persist(key: RootKey, job: FetchJob, as?: StateFile): Promise<void> {
    const id = rootId(key);
    // Writes of one root are chained: two writers of one .tmp file could interleave.
    const prev = this.writes.get(id) ?? Promise.resolve();
    const p = prev.then(async () => {
      const s = job.state;
      // A removed root's job (cancelled, or replaced) must not recreate its deps dir's file.
      if (s.name === 'cancelled' || this.jobs.get(id)?.job !== job) return;
      try {
        await writeStateFile(this.o.store.depsDir(key), as ?? { v: 1, view: job.view(), attempt: 'attempt' in s ? s.attempt : 0 });
      } catch (err) {
        // The root may have been removed meanwhile; anything else is worth a warning.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.log.warn({ err, root: id }, 'cannot persist fetch state');
      }
    });
    this.writes.set(id, p);
    await p;
    if (this.writes.get(id) === p) this.writes.delete(id);
  }

  private async mountsOf(key: RootKey, steps: StepStatus[]): Promise<ServeMount[]> {
    return serveMounts(this.o.store.treeDir(key), this.o.store.depsDir(key), steps);
  }

  /** A settled state from its file; done/failed recompute (and re-check) their mounts. */
  private async restore(key: RootKey, v: FetchView, attempt: number): Promise<JobState> {
    const steps = v.ecosystems ?? [];
    const now = new Date().toISOString();
    switch (v.state) {
      case 'done':
        return {
          name: 'done',
          steps,
          attempt,
          startedAt: v.startedAt ?? now,
          finishedAt: v.finishedAt ?? now,
          bytes: v.bytes ?? 0,
          log: v.log ?? '',
          mounts: await this.mountsOf(key, steps),
        };
      case 'failed':
        return {
          name: 'failed',
          error: v.error ?? 'failed',
          steps,
          attempt,
          finishedAt: v.finishedAt ?? now,
          log: v.log ?? '',
          mounts: await this.mountsOf(key, steps),
          ...(v.startedAt ? { startedAt: v.startedAt } : {}),
          ...(v.bytes !== undefined ? { bytes: v.bytes } : {}),
        };
      case 'refused':
        return { name: 'refused', error: v.error ?? 'refused', steps, attempt };
      default:
        return { name: 'none' };
    }
  }
}

function finishedAt(job: FetchJob): number {
  const s = job.state;
  return s.name === 'done' ? Date.parse(s.finishedAt) || 0 : 0;
}

function goProxyLabels(goProxy: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of goProxy.split(/[,|]/)) if (e.trim().startsWith('file://')) out[new URL(e.trim()).pathname] = '<goproxy>';
  return out;
}
