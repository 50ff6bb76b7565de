// A head whose workspaces come from earlier roots (donors.ts) is served from the
// donors' own output dirs at once, while its own hard-linked copy is made: the copy
// of playwright's node_modules took 1.6-7.5 s, and a session started before it
// landed was started again once it did (two cold starts for a one-file commit).
// Binding a donor's dir is safe because a settled fetch's output is sealed: no
// FETCH jail writes it again (fetch-reuse.ts), SERVE binds it read-only, and the
// mounts were checked (plain dirs, mount points in this head's tree) as any are.
// What it costs: a session started meanwhile binds the donor's dirs for its life,
// so when a donor is removed, the borrowers' copies are awaited first and those
// sessions restarted (FetchManager.cancel): their successors bind the copies.
import type { RootKey } from '../store/types.js';
import type { Donation } from './donors.js';
import { serveMounts } from './fetch-job.js';
import type { ServeMount } from './step.js';
import type { StepStatus } from './types.js';

/** A head served from donors' dirs: whom it borrows from, which steps, and when its own copy replaced them. */
export interface Borrowing {
  head: RootKey;
  /** The donors, by root id. */
  donors: Map<string, RootKey>;
  /** The borrowed steps as fetched ones (no `reused`): the restart a donor's removal asks for names them. */
  steps: StepStatus[];
  /** The copy in flight; resolves (never rejects) once it landed or failed. */
  copy: Promise<void>;
  /** ms when the head stopped serving the donors' dirs (its copy landed, or failed): sessions started before bind them. */
  until?: number;
}

/** The donations' mounts, from each donor's own deps dir, checked against the head's tree. */
export async function borrowedMounts(treeDir: string, found: readonly Donation[], depsOf: (k: RootKey) => string): Promise<ServeMount[]> {
  const out: ServeMount[] = [];
  for (const { donor, unit } of found) {
    const done = unit.map((s) => ({ ...s, state: 'done' as const }));
    out.push(...(await serveMounts(treeDir, depsOf(donor), done)));
  }
  return out;
}
