// Which earlier roots give a new root's workspaces (fetch-reuse.ts says what may be
// linked and how; this decides from whom): for each unit of the job's queued
// workspaces, the first root of the same org AND repo whose fetch settled with that
// unit done, from the same inputs, and whose output is still there. A composed
// root's base comes first and, while its fetch runs, is waited for (holding no fetch
// slot) when some unit would come from it. Never another org's or repo's root.
import { rootId, type RootKey } from '../store/types.js';
import { isPlainDir } from './ecosystems.js';
import type { FetchJob } from './fetch-job.js';
import { mkdir } from 'node:fs/promises';
import { markDepsReused } from '../store/incremental.js';
import { dropReuse, fetchInputEntries, linkOutput, reuseUnits, unitRels, workspaceDigest, type InputEntry } from './fetch-reuse.js';
import { linkPackageRefs } from './store-entries.js';
import type { StepStatus } from './types.js';

/** A unit of the new root's steps, the root that gives it, and that root's steps (for what it skipped). */
export interface Donation {
  donor: RootKey;
  unit: StepStatus[];
  from: StepStatus[];
}

export interface DonorsOptions {
  treeDir(key: RootKey): string;
  depsDir(key: RootKey): string;
  /** Every root's job. */
  jobs(): Iterable<{ key: RootKey; job: FetchJob }>;
  job(key: RootKey): FetchJob | undefined;
  /** Resolves when the root's fetch settled or `signal` aborted. */
  wait(key: RootKey, signal: AbortSignal): Promise<unknown>;
  /** The root's state-file write in flight, if any: a donor counts once its file says it settled. */
  written(key: RootKey): Promise<void> | undefined;
}

export class Donors {
  /** Each root's fetch inputs from its tree index, read once: roots are immutable. */
  private readonly inputs = new Map<string, Promise<InputEntry[] | undefined>>();
  constructor(private readonly o: DonorsOptions) {}

  forget(key: RootKey): void {
    this.inputs.delete(rootId(key));
  }

  async find(key: RootKey, steps: StepStatus[], base: RootKey | undefined, signal: AbortSignal): Promise<Donation[]> {
    const units = reuseUnits(steps.filter((s) => s.state === 'queued'));
    if (units.length === 0) return [];
    const mine = await this.inputsOf(key);
    if (!mine) return [];
    const same = async (other: RootKey, unit: StepStatus[]) => {
      const theirs = await this.inputsOf(other);
      return !!theirs && unit.every((s) => workspaceDigest(mine, s) !== undefined && workspaceDigest(mine, s) === workspaceDigest(theirs, s));
    };
    const baseJob = base && this.o.job(base);
    if (base && baseJob && !baseJob.settled) {
      let useful = false;
      for (const u of units) if (await same(base, u)) useful = true;
      if (useful) await this.o.wait(base, signal);
    }
    const candidates = [...this.o.jobs()]
      .filter(({ key: k, job }) => k.org === key.org && k.repo === key.repo && k.sha !== key.sha && (job.state.name === 'done' || job.state.name === 'failed'))
      .sort((a, b) => (base && a.key.sha === base.sha ? -1 : base && b.key.sha === base.sha ? 1 : finishedAt(b.job) - finishedAt(a.job)));
    const out: Donation[] = [];
    for (const unit of units) {
      for (const c of candidates) {
        if (signal.aborted) return [];
        // Once its state file says so: a root a crash left "running" would fetch again at the next start, through dirs we would share.
        await this.o.written(c.key);
        const cs = c.job.state;
        if (cs.name !== 'done' && cs.name !== 'failed') continue;
        const doneThere = unit.every((s) => cs.steps.some((d) => d.ecosystem === s.ecosystem && d.dir === s.dir && d.state === 'done'));
        if (!doneThere || !(await same(c.key, unit))) continue;
        let present = true;
        for (const rel of unitRels(unit)) if (!(await isPlainDir(this.o.depsDir(c.key), rel))) present = false;
        if (!present) continue; // its output was removed (over the byte bound)
        out.push({ donor: c.key, unit, from: cs.steps });
        break;
      }
    }
    return out;
  }

  private inputsOf(key: RootKey): Promise<InputEntry[] | undefined> {
    const id = rootId(key);
    let d = this.inputs.get(id);
    if (!d) {
      d = fetchInputEntries(this.o.treeDir(key)).catch(() => undefined);
      this.inputs.set(id, d);
    }
    return d;
  }
}

/** When a settled job finished (0 for one that never ran): the most recent donor is tried first. */
export function finishedAt(job: FetchJob): number {
  const s = job.state;
  return s.name === 'done' || s.name === 'failed' ? Date.parse(s.finishedAt) || 0 : 0;
}

/**
 * Link every donation's output dirs into `depsDir`. The marker first: a crash half-way
 * is cleaned by the next start (resume → dropReuse). It names the donor only when one
 * gave everything queued (the store charges a head nothing for its base's deps).
 * On a failure (a donor went away meanwhile, the disk refused) nothing linked stays.
 */
export async function linkDonations(found: Donation[], depsDir: string, depsOf: (k: RootKey) => string, queued: number): Promise<void> {
  const donors = [...new Set(found.map((f) => f.donor.sha))];
  const all = found.reduce((n, f) => n + f.unit.length, 0) === queued;
  await mkdir(depsDir, { recursive: true });
  await markDepsReused(depsDir, all && donors.length === 1 ? donors[0]! : 'several');
  try {
    for (const { donor, unit } of found) for (const rel of unitRels(unit)) await linkOutput(depsOf(donor), depsDir, rel);
    for (const d of new Set(found.map((f) => f.donor))) await linkPackageRefs(depsOf(d), depsDir);
  } catch (err) {
    await dropReuse(depsDir);
    throw err;
  }
}

/** The linked steps, done and naming the root they came from (and what it skipped). */
export function markLinked(found: Donation[]): StepStatus[] {
  const linked: StepStatus[] = [];
  for (const { donor, unit, from } of found) {
    for (const s of unit) {
      const d = from.find((x) => x.ecosystem === s.ecosystem && x.dir === s.dir);
      s.state = 'done';
      s.reused = donor.sha;
      if (d?.skipped) s.skipped = [...d.skipped];
      linked.push(s);
    }
  }
  return linked;
}
