// The FETCH phase as the rest of lspd sees it: one job per root, queued after
// upload and run in the background, at most LSPD_FETCH_SLOTS at a time.
//
// - Per workspace: each fetches and fails on its own (a job with a failed workspace
//   and a done one shows `partial`), and one whose inputs match a workspace an
//   earlier root of the org and repo fetched is linked from it before the job queues,
//   holding no slot (base-reuse.ts).
// - States per root: none | queued | running | done | failed | refused (types.ts),
//   persisted on every change and resumed at the next start (state-file.ts).
// - Fair between orgs: the queue hands out jobs round-robin between orgs, and an
//   org runs at most its share of the slots (src/tenancy/fair-share.ts), so one org's
//   hundred uploads delay another org's first fetch by at most one job.
// - Bounded: each job has a deadline (fetchTimeoutMs; aborting kills the jail) and
//   a byte bound on the deps dir (fetchMaxBytes; see fetch-job.ts for how).
// - Root removal cancels its job (queued: dropped; running: the jail is killed).
// - Sessions ask for the SERVE-side binds and env (serveBinds/serveEnv), wait for a
//   running fetch within their query budget (wait), and restart what they started
//   before a fetch finished (onDone).
import { mkdir } from 'node:fs/promises';
import type { Config } from '../config.js';
import { FairShare, OrgQueue, shareLimits } from '../tenancy/fair-share.js';
import type { Bind, Jail } from '../jail/types.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { rootId, type RootKey } from '../store/types.js';
import { defaultDetectLimits, detect, type DetectLimits } from './ecosystems.js';
import { readStateFile, resumedState, StateWrites, type StateFile } from './state-file.js';
import { FetchAbort, FetchJob, abortCause, initialSteps, runJob } from './fetch-job.js';
import type { ReuseCandidate } from './fetch-reuse.js';
import { BaseReuse, linkedLog } from './base-reuse.js';
import { REGISTRY_SETTINGS, type RegistrySettings, type ServeMount } from './step.js';
import type { Ecosystem, FetchStore, FetchView, StepStatus, Toolchains } from './types.js';
import { recordOf } from './ecosystems/table.js';
import { JobPackages } from './package-job.js';
import type { PackageStore } from './package-store.js';
import type { Abortable } from '../util/deadline.js';

/** `peek` of a root lspd has no job for: shared, never changed. */
const NO_FETCH: Readonly<FetchView> = Object.freeze({ state: 'none' });

export interface FetchManagerOptions {
  config: Pick<
    Config,
    'fetchTimeoutMs' | 'fetchSlots' | 'fetchMaxBytes' | keyof RegistrySettings | 'dataDir' | 'stderrRingBytes' | 'orgMaxFetches' | 'orgReservePercent'
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
  /** The per-org package store (package-store.ts); absent, every fetch downloads and keeps its own copy. */
  packages?: PackageStore;
}

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
  private readonly writes: StateWrites;
  private readonly reuse: BaseReuse;
  /** Awaited before a borrowing head's own copy is made: tests hold it to see the head served from its donor meanwhile. */
  copyGate: (key: RootKey) => Promise<void> = async () => undefined;
  private closed = false;
  private readonly concurrency: number;
  private readonly log: Logger;

  constructor(private readonly o: FetchManagerOptions) {
    // One slot let one org's fetch (up to its deadline) hold every other org's new
    // roots; with two or more, the fair share keeps one for an org that arrives.
    this.concurrency = o.config.fetchSlots;
    this.slots = new FairShare(shareLimits(this.concurrency, { orgCap: o.config.orgMaxFetches, reservePercent: o.config.orgReservePercent, floor: 1 }));
    this.log = o.log;
    this.writes = new StateWrites(o.log);
    this.reuse = new BaseReuse({
      store: o.store,
      log: o.log,
      closed: () => this.closed,
      jobs: () => this.jobs.values(),
      job: (k) => this.jobs.get(rootId(k))?.job,
      wait: (k, signal) => this.wait(k, signal),
      written: (k) => this.writes.pending(k),
      queue: (k) => {
        this.queue.push(k.org, rootId(k));
        this.pump();
      },
      notifyDone: (k, view) => this.notifyDone(k, view),
      wake: (id) => this.wake(id),
      persist: (k, job) => this.persist(k, job),
      copyGate: (k) => this.copyGate(k),
    });
    // The store awaits this before it deletes the files: no jail still writes them.
    o.store.onRemove((key) => this.cancel(key));
  }

  /**
   * After an upload: detect what the tree needs and queue it. Idempotent: a root
   * that already has a job answers that job's view. Resolves with the state the
   * PUT answer shows ('queued', 'none' or 'refused'). `reuse`: the root was
   * composed on a base, whose workspaces are tried first for linking (base-reuse.ts).
   */
  enqueue(key: RootKey, reuse?: ReuseCandidate): Promise<FetchView> {
    const id = rootId(key);
    const have = this.jobs.get(id);
    if (have) return Promise.resolve(have.job.view());
    this.reuse.expect(key, reuse);
    let p = this.pendingEnqueue.get(id);
    if (!p) {
      p = this.detectAndQueue(key, 1).finally(() => this.pendingEnqueue.delete(id));
      this.pendingEnqueue.set(id, p);
    }
    return p;
  }

  /**
   * Once the root's state-file writes queued so far have landed: what measures the deps
   * dir waits for this, or it may count the `.tmp` a write leaves beside the file for a
   * moment (a block too many, kept until the next measure). A job's end queues its
   * write before it tells its listeners, so a listener's call sees it.
   */
  async stateWritten(key: RootKey): Promise<void> {
    for (let p = this.writes.pending(key); p; p = this.writes.pending(key)) await p;
  }

  /** The fetch state of a root ('none' when lspd has no job for it). */
  state(key: RootKey): FetchView {
    return this.jobs.get(rootId(key))?.job.view() ?? { state: 'none' };
  }

  /** The fetch state of a root as `FetchJob.peek` gives it: not copied, read at once and never kept or changed. */
  peek(key: RootKey): Readonly<FetchView> {
    return this.jobs.get(rootId(key))?.job.peek() ?? NO_FETCH;
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
   * caller answers from the tree alone (dependencies running) when it is still queued
   * or running. `until`: also once the view says what the caller waits for (a
   * query: no workspace its server reads is on its way any more; those linked from
   * an earlier root count as there while their copy is made, borrow.ts).
   */
  async wait(key: RootKey, signal?: Abortable, opts?: { until?: (view: FetchView) => boolean }): Promise<FetchView> {
    const id = rootId(key);
    await this.pendingEnqueue.get(id)?.catch(() => undefined);
    for (;;) {
      const entry = this.jobs.get(id);
      if (!entry || entry.job.settled || signal?.aborted) return this.state(key);
      if (opts?.until?.(entry.job.view())) return this.state(key);
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
    }
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
    // While the rest runs, the workspaces linked from an earlier root are served already.
    const mounts: ServeMount[] = !s
      ? []
      : s.name === 'done' || s.name === 'failed'
        ? s.mounts
        : s.name === 'queued' || s.name === 'running'
          ? (s.early ?? [])
          : [];
    return mounts.map((m) => ({ host: m.host, at: m.treeRel ? `${treeAt}/${m.at}` : m.at }));
  }

  /** Deps dirs of the roots this one's binds borrow now (borrow.ts): answers name their files as this root's own. */
  lentDeps(key: RootKey): string[] {
    return this.reuse.lentDeps(key);
  }

  /** Dependency-related environment for a SERVE jail of this root running `ecosystem`'s server. */
  serveEnv(key: RootKey, ecosystem: Ecosystem): Record<string, string> {
    const env = recordOf(ecosystem)?.serveEnv;
    return env ? env(this.serveBinds(key, '/')) : {};
  }

  /**
   * At start (call it once the FETCH jail is proved; again later is harmless and
   * starts whatever is queued): load each stored root's state file (state-file.ts
   * says what each resumes as); a root with no state file (the crash came between
   * its upload and its enqueue) is detected anew.
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
      const { how, state } = await resumedState(saved, this.o.store.treeDir(key), this.o.store.depsDir(key));
      if (how === 'failed') this.settle(key, new FetchJob(state));
      else if (how === 'requeued') {
        const job = new FetchJob(state);
        this.jobs.set(id, { key, job });
        this.queueOrLink(key, job);
        this.log.info({ root: id, attempt: saved.attempt + 1 }, 'fetch re-queued after restart');
      } else this.jobs.set(id, { key, job: new FetchJob(state) });
    }
    this.pump();
  }

  /** Drop a root's job: queued ones never run, a running one's jail is killed. Resolves when it has stopped. */
  async cancel(key: RootKey): Promise<void> {
    const id = rootId(key);
    await this.pendingEnqueue.get(id)?.catch(() => undefined);
    await this.reuse.cancel(key);
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
    await this.reuse.close();
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
    this.jobs.set(rootId(key), { key, job });
    await this.persist(key, job);
    // The view before linking and pump(): the PUT answer says queued even when a slot
    // is free and the job starts (or its workspaces are linked) at once.
    const view = job.view();
    if (job.state.name === 'queued') this.queueOrLink(key, job);
    return view;
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
    job.to({ name: 'running', startedAt, abort, steps: q.steps, attempt: q.attempt, ...(q.early ? { early: q.early } : {}) });
    const depsDir = this.o.store.depsDir(key);
    const treeDir = this.o.store.treeDir(key);
    this.log.info({ root: id, attempt: q.attempt }, 'fetch started');
    try {
      await mkdir(depsDir, { recursive: true });
      await this.persist(key, job);
      const run = await runJob(
        { jail: this.o.jail, log: this.log, metrics: this.o.metrics },
        {
          org: key.org,
          ctx: {
            treeDir,
            depsDir,
            ...(Object.fromEntries(REGISTRY_SETTINGS.map((k) => [k, this.o.config[k]])) as RegistrySettings),
            tools: this.o.tools,
            ...(this.o.packages ? { packages: new JobPackages(this.o.packages, key.org, this.log) } : {}),
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
      );
      const result = { ...run, log: linkedLog(q.steps) + run.log };
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
      // it, never meets a session without the fetch. The state file's write is queued
      // first, so a listener that measures the deps dir can wait for it (stateWritten);
      // a crash before it lands runs the fetch again, which is harmless.
      const written = this.persist(key, job);
      this.notifyDone(key, job.view());
      await written;
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

  /** Before a job queues: link what earlier roots fetched (base-reuse.ts), else queue it in this turn, as a first commit always was. */
  private queueOrLink(key: RootKey, job: FetchJob): void {
    if (this.reuse.start(key, job)) return;
    this.queue.push(key.org, rootId(key));
    this.pump();
  }

  private notifyDone(key: RootKey, view: FetchView): void {
    for (const l of this.doneListeners) {
      try {
        l(key, view);
      } catch (err) {
        this.log.error({ err, root: rootId(key) }, 'fetch onDone listener threw');
      }
    }
  }

  private settle(key: RootKey, job: FetchJob): void {
    this.jobs.set(rootId(key), { key, job });
    void this.persist(key, job);
  }

  private wake(id: string): void {
    for (const w of [...(this.settleWaiters.get(id) ?? [])]) w();
    this.settleWaiters.delete(id);
  }

  /** Write the job's state file (state-file.ts); `as` overrides what is written (a shutdown writes queued). */
  private persist(key: RootKey, job: FetchJob, as?: StateFile): Promise<void> {
    const id = rootId(key);
    return this.writes.write(key, this.o.store.depsDir(key), () => {
      const s = job.state;
      // A removed root's job (cancelled, or replaced) must not recreate its deps dir's file.
      if (s.name === 'cancelled' || this.jobs.get(id)?.job !== job) return undefined;
      return as ?? { v: 1, view: job.view(), attempt: 'attempt' in s ? s.attempt : 0 };
    });
  }
}

function goProxyLabels(goProxy: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of goProxy.split(/[,|]/)) if (e.trim().startsWith('file://')) out[new URL(e.trim()).pathname] = '<goproxy>';
  return out;
}
