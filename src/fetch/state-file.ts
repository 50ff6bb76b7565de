// A root's fetch state on disk, the fetch manager's second job kept out of
// fetch-manager.ts: <deps>/fetch.json, the daemon's alone (no jail binds it),
// written on every change of the job, by rename (a crash leaves the old file or the
// new one, never half of one), one write of a root at a time; read back at start to
// resume: a settled job as it was, one a crash interrupted re-queued, once;
// interrupted twice, marked failed (a fetch that takes the daemon down must not do
// so at every start).
import { readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../log.js';
import { rootId, type RootKey } from '../store/types.js';
import { isSafeRelDir } from './ecosystems.js';
import { serveMounts, type JobState } from './fetch-job.js';
import { dropReuse } from './fetch-reuse.js';
import { STATE_FILE } from './step.js';
import type { FetchView } from './types.js';

/** Runs a crash may interrupt before the job is marked failed. */
const MAX_ATTEMPTS = 2;

/** What is persisted: the view plus what resuming needs. */
export interface StateFile {
  v: 1;
  view: FetchView;
  /** How many runs began; resuming a crash-interrupted job counts one more. */
  attempt: number;
}

const states = new Set(['none', 'queued', 'running', 'done', 'partial', 'failed', 'refused']);

export async function writeStateFile(depsDir: string, file: StateFile): Promise<void> {
  const path = join(depsDir, STATE_FILE);
  await writeFile(`${path}.tmp`, JSON.stringify(file));
  await rename(`${path}.tmp`, path);
}

/** The state file, or undefined when absent or not one lspd wrote (then the root is detected anew). */
export async function readStateFile(depsDir: string): Promise<StateFile | undefined> {
  try {
    const f = JSON.parse(await readFile(join(depsDir, STATE_FILE), 'utf8')) as StateFile;
    if (f.v !== 1 || !states.has(f.view?.state) || typeof f.attempt !== 'number') return undefined;
    // Workspace dirs are joined under host dirs when a job resumes: re-check them.
    if (!Array.isArray(f.view.ecosystems ?? []) || (f.view.ecosystems ?? []).some((s) => typeof s.dir !== 'string' || !isSafeRelDir(s.dir))) return undefined;
    return f;
  } catch {
    return undefined;
  }
}

/** The state-file writes in flight, chained per root: two writers of one .tmp file could interleave. */
export class StateWrites {
  private readonly writes = new Map<string, Promise<void>>();

  constructor(private readonly log: Logger) {}

  /** The root's write in flight, if any. */
  pending(key: RootKey): Promise<void> | undefined {
    return this.writes.get(rootId(key));
  }

  /** Write what `file()` says at the write's turn (undefined: the job went, write nothing). */
  async write(key: RootKey, depsDir: string, file: () => StateFile | undefined): Promise<void> {
    const id = rootId(key);
    const prev = this.writes.get(id) ?? Promise.resolve();
    const p = prev.then(async () => {
      const f = file();
      if (!f) return;
      try {
        await writeStateFile(depsDir, f);
      } catch (err) {
        // The root may have been removed meanwhile; anything else is worth a warning.
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') this.log.warn({ err, root: id }, 'cannot persist fetch state');
      }
    });
    this.writes.set(id, p);
    await p;
    if (this.writes.get(id) === p) this.writes.delete(id);
  }
}

/**
 * What a saved state resumes as: `restored`, a settled job as it was (done and
 * failed recompute, and re-check, their mounts); `requeued`, one a crash interrupted
 * (attempt+1); `failed`, one interrupted MAX_ATTEMPTS times.
 */
export async function resumedState(saved: StateFile, treeDir: string, depsDir: string): Promise<{ how: 'restored' | 'requeued' | 'failed'; state: JobState }> {
  const { view, attempt } = saved;
  if (view.state === 'queued' || view.state === 'running') {
    if (attempt >= MAX_ATTEMPTS) {
      const steps = (view.ecosystems ?? []).map((s) =>
        s.state === 'queued' || s.state === 'running' ? { ...s, state: 'failed' as const, reason: 'interrupted by daemon restarts' } : s,
      );
      const state: JobState = {
        name: 'failed',
        error: `the fetch was interrupted by a daemon restart ${attempt} times`,
        finishedAt: new Date().toISOString(),
        log: '',
        mounts: await serveMounts(treeDir, depsDir, steps),
        steps,
        attempt,
      };
      return { how: 'failed', state };
    }
    // What a reuse linked before the crash is linked again (or fetched): never half-kept.
    const relinked = await dropReuse(depsDir);
    const steps = (view.ecosystems ?? []).map((s) =>
      s.state === 'running' || (relinked && s.reused !== undefined) ? { ecosystem: s.ecosystem, dir: s.dir, state: 'queued' as const } : s,
    );
    return { how: 'requeued', state: { name: 'queued', steps, attempt: attempt + 1 } };
  }
  return { how: 'restored', state: await restore(treeDir, depsDir, view, attempt) };
}

/** A settled state from its file; done/failed recompute (and re-check) their mounts. */
async function restore(treeDir: string, depsDir: string, v: FetchView, attempt: number): Promise<JobState> {
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
        mounts: await serveMounts(treeDir, depsDir, steps),
      };
    case 'partial':
    case 'failed':
      return {
        name: 'failed',
        error: v.error ?? 'failed',
        steps,
        attempt,
        finishedAt: v.finishedAt ?? now,
        log: v.log ?? '',
        mounts: await serveMounts(treeDir, depsDir, steps),
        ...(v.startedAt ? { startedAt: v.startedAt } : {}),
        ...(v.bytes !== undefined ? { bytes: v.bytes } : {}),
      };
    case 'refused':
      return { name: 'refused', error: v.error ?? 'refused', steps, attempt };
    default:
      return { name: 'none' };
  }
}
