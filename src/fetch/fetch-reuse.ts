// Fetch reuse, per workspace: a workspace (an npm lockfile dir, a Python lock, a
// composer.lock; all Go modules of a root together, they share one module cache)
// whose fetch inputs (every file its fetch reads, by path and git blob id from the
// root's tree index, ./ecosystems/<name>.ts readsInput) are those of a workspace an
// earlier root of the same org and repo fetched (done) gets that fetch as a
// hard-linked copy of its output dir, even when another workspace of that root
// failed. Links, not a reference: deleting or evicting the earlier root later
// removes its names, never ours. The copy is read-only in effect: SERVE binds it
// read-only, and no FETCH jail ever writes a dir that holds links (each step binds
// only its own output dir, and dirs that nest are linked or fetched together; a job
// that falls back to a real fetch first removes whatever a reuse left, `dropReuse`:
// `openForJail` would otherwise chmod the earlier root's inodes through them).
// Never across orgs, nor repos: a fetch is the org's.
import { chmod, constants, copyFile, link, lstat, mkdir, readdir, readlink, rm, symlink } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { REUSED_DEPS_FILE } from '../store/incremental.js';
import { readTreeIndex } from '../store/tree-index.js';
import type { RootKey } from '../store/types.js';
import { ecosystemTable, recordOf } from './ecosystems/table.js';
import { removeOutputs } from './fetch-job.js';
import type { Workspace } from './types.js';

/** What an incremental upload tells the fetcher: its base, and the paths its layer added, replaced or removed. */
export interface ReuseCandidate {
  base: RootKey;
  changed: readonly string[];
}

/** A tree file some ecosystem's fetch may read: path, kind and git blob id ('' when the index has none). */
export interface InputEntry {
  path: string;
  kind: string;
  id: string;
}

/** True when any changed path is a file some workspace's fetch reads. */
export function touchesFetchInputs(changed: Iterable<string>): boolean {
  for (const p of changed) if (ecosystemTable.some((r) => r.readsInput(p, ''))) return true;
  return false;
}

/** The tree's fetch inputs from its index (never a walk of the tree); undefined without an index (a root stored before lspd kept one). */
export async function fetchInputEntries(treeDir: string): Promise<InputEntry[] | undefined> {
  const entries = await readTreeIndex(dirname(treeDir));
  if (!entries) return undefined;
  return entries.flatMap((e) => (e.kind !== 'dir' && touchesFetchInputs([e.path]) ? [{ path: e.path, kind: e.kind, id: e.id ?? '' }] : []));
}

/** A digest of what workspace `ws`'s fetch reads; equal digests, equal fetch. undefined when an input has no blob id: then no reuse is claimed. */
export function workspaceDigest(entries: readonly InputEntry[], ws: Workspace): string | undefined {
  const rec = recordOf(ws.ecosystem);
  if (!rec) return undefined;
  const parts: string[] = [];
  for (const e of entries) {
    if (!rec.readsInput(e.path, ws.dir)) continue;
    if (!e.id) return undefined;
    parts.push(`${e.kind}\u0000${e.path}\u0000${e.id}`);
  }
  parts.sort();
  return createHash('sha256')
    .update(`${ws.ecosystem}\u0000${ws.dir}\n${parts.join('\n')}`)
    .digest('hex');
}

const nests = (a: string, b: string) => a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);

/**
 * Workspaces in units that are reused or fetched whole: those whose output dirs are
 * equal or nest (every Go module: one module cache; an npm workspace inside
 * another's dir), since linking one and fetching the other would hand a FETCH jail
 * a dir holding links.
 */
export function reuseUnits<W extends Workspace>(steps: readonly W[]): W[][] {
  const units: { rels: string[]; steps: W[] }[] = [];
  for (const s of steps) {
    const rel = recordOf(s.ecosystem)?.outputRel(s.dir);
    if (rel === undefined) continue;
    const hit = units.filter((u) => u.rels.some((r) => nests(r, rel)));
    const merged = { rels: [rel, ...hit.flatMap((u) => u.rels)], steps: [...hit.flatMap((u) => u.steps), s] };
    for (const h of hit) units.splice(units.indexOf(h), 1);
    units.push(merged);
  }
  return units.map((u) => u.steps);
}

/** The <deps>-relative output dirs of a unit, outermost first, each once. */
export function unitRels(unit: readonly Workspace[]): string[] {
  const rels = [...new Set(unit.map((s) => recordOf(s.ecosystem)?.outputRel(s.dir)).filter((r): r is string => r !== undefined))].sort();
  return rels.filter((r) => !rels.some((o) => o !== r && r.startsWith(`${o}/`)));
}

/** Link output dir `rel` of an earlier root's deps dir into ours (parents made 0755, as the SERVE uid must read them). */
export async function linkOutput(fromDeps: string, toDeps: string, rel: string): Promise<void> {
  let p = toDeps;
  for (const seg of dirname(rel) === '.' ? [] : dirname(rel).split('/')) {
    p = join(p, seg);
    await mkdir(p, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
    await chmod(p, 0o755);
  }
  await linkTree(join(fromDeps, rel), join(toDeps, rel));
}

/** Before a real fetch of a root a crash left half-linked: remove what a reuse left (its links must never be handed to a FETCH jail). */
export async function dropReuse(depsDir: string): Promise<boolean> {
  const marker = await lstat(join(depsDir, REUSED_DEPS_FILE)).catch(() => undefined);
  if (!marker) return false;
  await removeOutputs(depsDir);
  await rm(join(depsDir, REUSED_DEPS_FILE), { force: true });
  return true;
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
