// One root's fetch: its state machine, and the run that takes it from queued to
// done or failed. The manager (fetch-manager.ts) owns the queue, persistence (state-file.ts) and
// callers; this module owns what happens while a job runs: one FETCH-jail spawn per
// workspace in turn, a deadline and a byte bound over the whole job, and the
// bounded, scrubbed log tail the caller sees.
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Jail } from '../jail/types.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { removeTree } from '../store/remove-tree.js';
import { diskUsage } from './disk-usage.js';
import { ecosystemTable, recordOf } from './ecosystems/table.js';
import { LogTail } from './log-tail.js';
import { openForJail, seal, sealParents } from './perms.js';
import { WHEELS_OUT } from './python-wheels.js';
import { COMPOSER_CACHE_REL, GO_MODCACHE_REL, NPM_CACHE_REL, PYTHON_TMP_REL, type ServeMount, type StepContext, type StepSpawn } from './step.js';
import type { FetchView, PlanItem, StepStatus } from './types.js';
import { IllegalTransition } from '../util/state-machine.js';

/** Why a running job was stopped; each ends differently (see FetchManager). */
export type AbortCause = 'timeout' | 'bytes' | 'cancelled' | 'shutdown';

export class FetchAbort extends Error {
  constructor(readonly cause_: AbortCause) {
    super(`fetch aborted: ${cause_}`);
    this.name = 'FetchAbort';
  }
}

interface Common {
  steps: StepStatus[];
  /** How many times a run began (a daemon crash mid-run re-queues with attempt+1). */
  attempt: number;
}
/** The job's states; a field exists only where it means something. */
export type JobState =
  | { name: 'none' }
  // early: mounts of workspaces linked from an earlier root, served while the rest waits or runs.
  | ({ name: 'queued'; early?: ServeMount[] } & Common)
  | ({ name: 'running'; startedAt: string; abort: AbortController; early?: ServeMount[] } & Common)
  | ({ name: 'done'; startedAt: string; finishedAt: string; bytes: number; log: string; mounts: ServeMount[] } & Common)
  | ({ name: 'failed'; error: string; startedAt?: string; finishedAt: string; bytes?: number; log: string; mounts: ServeMount[] } & Common)
  | ({ name: 'refused'; error: string } & Common)
  | { name: 'cancelled' };

export type JobStateName = JobState['name'];

/** Legal transitions. Initial states (from detection or a state file) are set by `FetchJob`'s constructor. */
const next: Record<JobStateName, readonly JobStateName[]> = {
  none: [],
  queued: ['running', 'cancelled', 'failed'],
  running: ['done', 'failed', 'cancelled'],
  done: [],
  failed: [],
  refused: [],
  cancelled: [],
};

export class FetchJob {
  private s: JobState;
  constructor(initial: JobState) {
    this.s = initial;
  }
  get state(): JobState {
    return this.s;
  }
  to(s: JobState): void {
    if (!next[this.s.name].includes(s.name)) throw new IllegalTransition('fetch job', this.s.name, s.name);
    this.s = s;
  }
  get settled(): boolean {
    return next[this.s.name].length === 0;
  }

  /** What callers see (API.md `fetch`), theirs to keep; cancelled never reaches one (its root is gone). */
  view(): FetchView {
    const v = this.peek();
    return v.ecosystems ? { ...v, ecosystems: copy(v.ecosystems) } : { ...v };
  }

  /**
   * The view over the job's own steps, not copied (they change in place while it
   * runs): read in the turn it is asked for, never kept or changed (a query's
   * dependency checks, twice per query: issue 28).
   */
  peek(): Readonly<FetchView> {
    const s = this.s;
    switch (s.name) {
      case 'none':
      case 'cancelled':
        return { state: 'none' };
      case 'queued':
        return { state: 'queued', ecosystems: s.steps };
      case 'running':
        return { state: 'running', ecosystems: s.steps, startedAt: s.startedAt };
      case 'done':
        return { state: 'done', ecosystems: s.steps, log: s.log, startedAt: s.startedAt, finishedAt: s.finishedAt, bytes: s.bytes };
      case 'failed':
        return {
          // Workspaces fail on their own: what finished is served (serveMounts) and said so.
          state: s.steps.some((st) => st.state === 'done') ? 'partial' : 'failed',
          error: s.error,
          ecosystems: s.steps,
          log: s.log,
          ...(s.startedAt ? { startedAt: s.startedAt } : {}),
          finishedAt: s.finishedAt,
          ...(s.bytes !== undefined ? { bytes: s.bytes } : {}),
        };
      case 'refused':
        return { state: 'refused', error: s.error, ecosystems: s.steps };
    }
  }
}

const copy = (steps: StepStatus[]): StepStatus[] => steps.map((s) => ({ ...s }));

/** Steps as detection planned them: fetches queued, refusals final. */
export function initialSteps(plan: PlanItem[]): StepStatus[] {
  return plan.map((p) =>
    p.action === 'fetch' ? { ecosystem: p.ecosystem, dir: p.dir, state: 'queued' } : { ecosystem: p.ecosystem, dir: p.dir, state: 'refused', reason: p.reason },
  );
}

export interface RunDeps {
  jail: Jail;
  log: Logger;
  metrics: Pick<Metrics, 'fetchSeconds'>;
}

export interface RunOptions {
  /** The root's org: its jails' uids and egress connections count against its share. */
  org: string;
  ctx: Omit<StepContext, 'log'>;
  steps: StepStatus[];
  signal: AbortSignal;
  maxBytes: number;
  byteCheckIntervalMs: number;
  logTailBytes: number;
  stderrRingBytes: number;
  /** Host dirs replaced by a label in the log tail. */
  scrub: Record<string, string>;
  /** Called after each step changes state, so the manager can persist and show progress. */
  onStep: () => void;
}

export interface RunResult {
  steps: StepStatus[];
  /** First failure's reason, or the abort's. */
  error?: string;
  aborted?: AbortCause;
  /** Steps that were running when the job's signal stopped them (failed, not by their own fault). */
  stopped: StepStatus[];
  bytes: number;
  log: string;
  mounts: ServeMount[];
}

/** Run every queued step of a job in turn. Never throws for a step's failure; the result says. */
export async function runJob(deps: RunDeps, o: RunOptions): Promise<RunResult> {
  const tail = new LogTail(o.logTailBytes, o.scrub);
  const ctx: StepContext = { ...o.ctx, log: tail };
  // Mutated in place: the running state holds this array, so GET shows progress.
  const steps = o.steps;
  // The job's signal (deadline, cancel, shutdown) joined with the byte watcher's.
  const bytesCtl = new AbortController();
  const signal = AbortSignal.any([o.signal, bytesCtl.signal]);
  const watcher = watchBytes(o.ctx.depsDir, o.maxBytes, o.byteCheckIntervalMs, signal, () => bytesCtl.abort(new FetchAbort('bytes')));
  // Each workspace fails on its own and the next still runs: the error names them all (a few).
  const failures: string[] = [];
  const stopped: StepStatus[] = [];
  try {
    for (const step of steps) {
      if (step.state !== 'queued') continue;
      if (signal.aborted) {
        step.state = 'skipped';
        step.reason = 'not run: the fetch was stopped';
        continue;
      }
      step.state = 'running';
      o.onStep();
      const end = await runStep(deps, ctx, step, o, signal, tail);
      if (end.state === 'done') step.state = 'done';
      else {
        const reason = end.state === 'stopped' ? describeAbort(end.cause) : end.reason;
        step.state = 'failed';
        step.reason = reason;
        if (end.state === 'stopped') stopped.push(step);
        failures.push(`${step.ecosystem} in ${step.dir || '.'}: ${reason}`);
      }
      o.onStep();
    }
  } finally {
    watcher.stop();
  }
  let error =
    failures.length === 0 ? undefined : failures.length <= 4 ? failures.join(' ') : `${failures.slice(0, 4).join(' ')} … and ${failures.length - 4} more.`;
  const early = signal.aborted ? abortCause(signal) : undefined;
  if (early === 'cancelled' || early === 'shutdown') {
    // The root is being deleted, or the daemon is stopping within its grace: no
    // walks over what was fetched. A resumed job seals and measures when it ends.
    return { steps, stopped, aborted: early, bytes: 0, log: tail.tail(), mounts: [] };
  }
  // What npm, pip and composer downloaded goes to the org's package store before their caches are removed.
  await o.ctx.packages?.takeNpm(join(o.ctx.depsDir, NPM_CACHE_REL), o.ctx.depsDir);
  await o.ctx.packages?.takeWheels(join(o.ctx.depsDir, PYTHON_TMP_REL, WHEELS_OUT), o.ctx.depsDir);
  await o.ctx.packages?.takeDists(join(o.ctx.depsDir, COMPOSER_CACHE_REL), o.ctx.depsDir);
  for (const rel of scratchDirs()) await removeTree(join(o.ctx.depsDir, rel));
  // Only what this job's jails wrote: a workspace linked from an earlier root is that root's, sealed when it was fetched.
  const ran = new Set(steps.filter((s) => s.reused === undefined && s.state !== 'refused').map((s) => recordOf(s.ecosystem)?.outputRel(s.dir)));
  for (const rel of ran) {
    if (rel === undefined) continue;
    await sealParents(o.ctx.depsDir, rel);
    await seal(join(o.ctx.depsDir, rel));
  }
  let bytes = await diskUsage(o.ctx.depsDir);
  const aborted = signal.aborted ? abortCause(signal) : undefined;
  if (aborted === 'bytes' || bytes > o.maxBytes) {
    // Over the bound: what was fetched is not kept (partly installed trees mislead
    // servers more than absent ones), and the disk is handed back at once.
    tail.line(`lspd: dependency dir used ${bytes} bytes, over the bound of ${o.maxBytes}; fetched files removed`);
    await removeOutputs(o.ctx.depsDir);
    bytes = await diskUsage(o.ctx.depsDir);
    // Nothing of it is served: no workspace is done (the root's fetch is failed, not partial).
    for (const st of steps) {
      if (st.state !== 'done') continue;
      st.state = 'failed';
      st.reason = 'removed: the dependencies took more bytes than allowed';
      delete st.reused;
    }
    return { steps, stopped, error: `the dependencies took more than ${o.maxBytes} bytes`, aborted: 'bytes', bytes, log: tail.tail(), mounts: [] };
  }
  if (aborted === 'timeout') error = 'the fetch did not finish within its deadline';
  // Sealed and within the bound: Go's downloads go to the org's store by their go.sum hash,
  // then each other file becomes a link to the org's stored copy of its bytes.
  await o.ctx.packages?.takeGo(join(o.ctx.depsDir, GO_MODCACHE_REL));
  await o.ctx.packages?.dedupe([...ran].filter((r): r is string => r !== undefined).map((r) => join(o.ctx.depsDir, r)));
  const mounts = await serveMounts(o.ctx.treeDir, o.ctx.depsDir, steps, (l) => tail.line(l));
  return { steps, stopped, ...(error !== undefined ? { error } : {}), ...(aborted ? { aborted } : {}), bytes, log: tail.tail(), mounts };
}

/**
 * How one step ended: done, failed for a reason of its own (one sentence), or
 * stopped by the job's signal (deadline, bytes, the root removed, shutdown).
 */
type StepEnd = { state: 'done' } | { state: 'failed'; reason: string } | { state: 'stopped'; cause: AbortCause };

/** One workspace in the FETCH jail. */
async function runStep(deps: RunDeps, ctx: StepContext, step: StepStatus, o: RunOptions, signal: AbortSignal, tail: LogTail): Promise<StepEnd> {
  const fetcher = recordOf(step.ecosystem);
  const started = performance.now();
  const observe = (result: string) => deps.metrics.fetchSeconds.observe({ ecosystem: step.ecosystem, result }, (performance.now() - started) / 1000);
  if (!fetcher) {
    observe('failed');
    return { state: 'failed', reason: `no fetcher for ${step.ecosystem}` };
  }
  tail.line(`== ${step.ecosystem} ${step.dir || '.'}`);
  let spawn: StepSpawn;
  try {
    spawn = await fetcher.prepare(ctx, step.dir);
  } catch (err) {
    observe('failed');
    // A fetcher's error may quote a host path (an errno on a file of the tree): labelled as the tail is.
    const msg = tail.label((err as Error).message);
    tail.line(`lspd: preparing failed: ${msg}`);
    return { state: 'failed', reason: `could not prepare the workspace (${msg})` };
  }
  try {
    for (const b of spawn.binds) if (b.rw) await openForJail(b.host);
  } catch (err) {
    observe('failed');
    return { state: 'failed', reason: `could not prepare the dependency dir (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  // Programs and files by their base name (no host or jail layout in the log); URLs and flags as they are.
  tail.line(
    `$ ${spawn.argv
      .slice(spawn.argv[0]?.endsWith('/node') ? 1 : 0)
      .map((a) => (a.startsWith('/') ? a.slice(a.lastIndexOf('/') + 1) : a))
      .join(' ')}`,
  );
  let output = '';
  const keep = (d: Buffer) => {
    const s = d.toString('utf8');
    tail.append(s);
    output = (output + s).slice(-o.stderrRingBytes);
  };
  const { skipped: skippedBefore = [], ...jailSpawn } = spawn;
  for (const s of skippedBefore) tail.line(`lspd: skipped ${s}`);
  try {
    // Background CPU weight (cgroup.ts): a download yields the cores to a session a query waits on.
    const proc = await deps.jail.spawn({ phase: 'fetch', org: o.org, ...jailSpawn, signal, stderrRingBytes: o.stderrRingBytes, background: true });
    proc.stdin.end();
    proc.stdout.on('data', keep);
    const exit = await proc.exited;
    const err = proc.stderrTail();
    tail.append(err);
    output += err;
    deps.log.debug({ ecosystem: step.ecosystem, dir: step.dir, code: exit.code, signal: exit.signal }, 'fetch step exited');
    if (signal.aborted) {
      observe(abortCause(signal));
      return { state: 'stopped', cause: abortCause(signal) };
    }
    if (exit.code === 0) {
      observe('done');
      const skipped = [...skippedBefore, ...((await fetcher.skipped?.(ctx, step.dir)) ?? [])];
      if (skipped.length > 0) step.skipped = skipped;
      return { state: 'done' };
    }
    observe('failed');
    const hint = fetcher.hint(output);
    if (hint) tail.line(`lspd: ${hint}`);
    return { state: 'failed', reason: hint ?? `${fetcher.command} exited with ${exit.code ?? exit.signal}` };
  } catch (err) {
    observe(signal.aborted ? abortCause(signal) : 'failed');
    if (signal.aborted) return { state: 'stopped', cause: abortCause(signal) };
    deps.log.warn({ err, ecosystem: step.ecosystem }, 'fetch jail spawn failed');
    tail.line(`lspd: the FETCH jail could not start: ${(err as Error).message}`);
    return { state: 'failed', reason: 'the FETCH jail could not start' };
  }
}

export function abortCause(signal: AbortSignal): AbortCause {
  const r: unknown = signal.reason;
  return r instanceof FetchAbort ? r.cause_ : 'cancelled';
}

function describeAbort(c: AbortCause): string {
  switch (c) {
    case 'timeout':
      return 'stopped: the fetch did not finish within its deadline';
    case 'bytes':
      return 'stopped: the dependencies took more bytes than allowed';
    case 'cancelled':
      return 'stopped: the root was removed';
    case 'shutdown':
      return 'stopped: the daemon shut down';
  }
}

/**
 * The byte bound, checked while the jail writes: a walk of the deps dir every
 * interval (at least four times the last walk's duration, so a huge node_modules
 * does not keep a core busy). Over the bound, the job is aborted, which kills the
 * jail. A fetcher can overshoot by what it writes between two checks; the result
 * is measured again after the run and the store's disk quota covers the rest. A
 * hard bound would need a size-limited filesystem per root (a loop device or
 * project quotas), which the host may not offer.
 */
function watchBytes(dir: string, maxBytes: number, intervalMs: number, signal: AbortSignal, onOver: () => void) {
  const ctl = new AbortController();
  const state = {
    overBytes: false,
    stop: () => ctl.abort(),
  };
  const onAbort = () => ctl.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  void (async () => {
    let wait = intervalMs;
    while (!ctl.signal.aborted) {
      await sleep(wait, undefined, { signal: ctl.signal }).catch(() => undefined);
      if (ctl.signal.aborted) break;
      const t0 = performance.now();
      const used = await diskUsage(dir, maxBytes, ctl.signal);
      wait = Math.max(intervalMs, 4 * (performance.now() - t0));
      if (used > maxBytes && !ctl.signal.aborted) {
        state.overBytes = true;
        onOver();
        break;
      }
    }
    signal.removeEventListener('abort', onAbort);
  })();
  return state;
}

/** Top-level <deps> dirs the fetchers' results live in (each record's; read at call time: the table imports this module's importers). */
const outputDirs = () => ecosystemTable.map((r) => r.outputDir);
/** <deps> dirs fetchers write only during a job (download caches). */
const scratchDirs = () => ecosystemTable.flatMap((r) => r.scratchDirs ?? []);

/** Remove what the fetchers wrote (not the state file). */
export async function removeOutputs(depsDir: string): Promise<void> {
  for (const rel of [...outputDirs(), ...scratchDirs()]) {
    await removeTree(join(depsDir, rel));
  }
}

/** SERVE mounts of every step that finished (a failed job still serves what did finish). */
export async function serveMounts(treeDir: string, depsDir: string, steps: StepStatus[], notes?: (line: string) => void): Promise<ServeMount[]> {
  const out: ServeMount[] = [];
  const seen = new Set<string>();
  for (const s of steps) {
    if (s.state !== 'done') continue;
    // Per workspace; a root-wide mount (Go's one module cache) comes once.
    for (const m of (await recordOf(s.ecosystem)?.serveMounts(treeDir, depsDir, s.dir, notes)) ?? []) {
      const k = `${m.host}\u0000${m.at}`;
      if (seen.has(k)) continue;
      seen.add(k);
      out.push(m);
    }
  }
  return out;
}
