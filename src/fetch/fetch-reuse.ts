// Fetch reuse for incremental roots: a root composed on a base (store/compose.ts)
// whose layer touched none of the files a fetcher reads has the same dependencies
// as its base, so instead of running the fetchers again its deps dir becomes a
// hard-linked copy of the base's fetched output. Links, not a reference: deleting
// or evicting the base later removes its names, never the head's. The copy is
// shared read-only in effect: SERVE binds it read-only, and no FETCH jail ever
// writes a dir that holds links (a job that falls back to a real fetch first
// removes whatever a reuse left, see `dropReuse`; `openForJail` would otherwise
// chmod the base's inodes through them).
//
// Full uploads too: a new commit whose fetch inputs (every lockfile, manifest and
// committed node_modules file, by path and git blob id from its tree index) are
// those of a root of the same org and repo whose fetch is done gets that fetch
// the same way ("twin"). Never across orgs, nor repos: a fetch is the org's.
import { chmod, constants, copyFile, link, lstat, mkdir, readdir, readlink, rm, symlink } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { markDepsReused, REUSED_DEPS_FILE } from '../store/incremental.js';
import { readTreeIndex } from '../store/tree-index.js';
import type { RootKey } from '../store/types.js';
import { removeOutputs, serveMounts } from './fetch-job.js';
import type { ServeMount } from './step.js';
import { OUTPUT_DIRS } from './step.js';
import type { StepStatus } from './types.js';

/** What an incremental upload tells the fetcher: its base, and the paths its layer added, replaced or removed. */
export interface ReuseCandidate {
  base: RootKey;
  changed: readonly string[];
}

/**
 * Names detection and the fetchers read (ecosystems.ts planDir, npm.ts, go.ts;
 * keep in step): lockfiles, manifests and the configuration beside them. A path
 * inside a node_modules dir counts too (a committed one changes what is planned
 * and where SERVE mounts).
 */
const FETCH_INPUTS = new Set([
  'go.mod',
  'go.sum',
  'go.work',
  'go.work.sum',
  'package.json',
  'package-lock.json',
  'npm-shrinkwrap.json',
  'yarn.lock',
  'pnpm-lock.yaml',
  '.npmrc',
  'composer.json',
  'composer.lock',
  'Cargo.toml',
  'Cargo.lock',
  'requirements.txt',
  'pyproject.toml',
  'setup.py',
  'Pipfile',
  'poetry.lock',
]);

export function touchesFetchInputs(changed: Iterable<string>): boolean {
  for (const p of changed) {
    const segs = p.split('/');
    if (FETCH_INPUTS.has(segs[segs.length - 1]!) || segs.includes('node_modules')) return true;
  }
  return false;
}

/**
 * A digest of what the fetch of the tree at `treeDir` reads: each fetch input's
 * path, kind and git blob id, from the root's tree index. Equal digests, equal
 * plans and equal dependencies. undefined without an index (a root stored before
 * lspd kept one) or with an id missing: then no reuse is claimed.
 */
export async function fetchInputsDigest(treeDir: string): Promise<string | undefined> {
  const entries = await readTreeIndex(dirname(treeDir));
  if (!entries) return undefined;
  const parts: string[] = [];
  for (const e of entries) {
    if (e.kind === 'dir' || !touchesFetchInputs([e.path])) continue;
    if (!e.id) return undefined;
    parts.push(`${e.kind}\u0000${e.path}\u0000${e.id}`);
  }
  parts.sort();
  return createHash('sha256').update(parts.join('\n')).digest('hex');
}

/** A done base's steps cover the head's plan: every step the head would run, the base ran and finished. */
export function coveredSteps(head: readonly StepStatus[], base: readonly StepStatus[]): StepStatus[] | undefined {
  const out: StepStatus[] = [];
  for (const h of head) {
    if (h.state !== 'queued') {
      out.push({ ...h });
      continue;
    }
    const b = base.find((s) => s.ecosystem === h.ecosystem && s.dir === h.dir);
    if (!b || b.state !== 'done') return undefined;
    out.push({ ecosystem: h.ecosystem, dir: h.dir, state: 'done' });
  }
  return out;
}

/**
 * Link the base's fetched output into the head's deps dir and answer the head's
 * serve mounts (checked against the head's own tree). The marker goes first, so
 * the store charges the head nothing for what it shares, and a crash half-way is
 * cleaned up by the next run (`dropReuse`).
 */
export async function linkBaseDeps(baseDeps: string, headDeps: string, headTree: string, baseSha: string, steps: StepStatus[]): Promise<ServeMount[]> {
  await markDepsReused(headDeps, baseSha);
  for (const rel of OUTPUT_DIRS) await linkTree(join(baseDeps, rel), join(headDeps, rel));
  return serveMounts(headTree, headDeps, steps);
}

/** Before a real fetch: remove what a reuse left (its links must never be handed to a FETCH jail). */
export async function dropReuse(depsDir: string): Promise<void> {
  const marker = await lstat(join(depsDir, REUSED_DEPS_FILE)).catch(() => undefined);
  if (!marker) return;
  await removeOutputs(depsDir);
  await rm(join(depsDir, REUSED_DEPS_FILE), { force: true });
}

/** Copy a directory tree as hard links (symlinks recreated, directories made 0755); links are never followed. */
async function linkTree(src: string, dst: string): Promise<void> {
  const top = await lstat(src).catch(() => undefined);
  if (!top?.isDirectory()) return;
  const stack: [string, string][] = [[src, dst]];
  while (stack.length > 0) {
    const [s, d] = stack.pop()!;
    await mkdir(d, { mode: 0o755 });
    await chmod(d, 0o755); // the umask must not hide the dir from the SERVE jail's uid
    for (const e of await readdir(s, { withFileTypes: true })) {
      const from = join(s, e.name);
      const to = join(d, e.name);
      if (e.isDirectory()) stack.push([from, to]);
      else if (e.isSymbolicLink()) await symlink(await readlink(from), to);
      else if (e.isFile()) await linkOrCopy(from, to);
      // anything else (a fifo a fetcher made) is left behind: SERVE reads files only
    }
  }
}

/** A file linked by too many roots (EMLINK: ext4 allows 65000 links) is copied instead. */
async function linkOrCopy(from: string, to: string): Promise<void> {
  try {
    await link(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EMLINK') throw err;
    await copyFile(from, to, constants.COPYFILE_EXCL | constants.COPYFILE_FICLONE);
  }
}
