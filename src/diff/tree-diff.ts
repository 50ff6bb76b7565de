// Which files differ between two stored roots. Every root keeps tree.idx (the
// writer thread's git blob ids, src/store/tree-index.ts), so this is a comparison
// of ids, no file read. A root stored before lspd kept an index is compared by
// walking both trees and hashing the files (bounded: sizes first, then contents,
// at most MAX_HASHED_BYTES in all; past it a same-sized file counts as modified and
// the answer says so).
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir, readlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { readTreeIndex, type TreeEntry } from '../store/tree-index.js';

export type FileChange = 'added' | 'modified' | 'removed';

export interface TreeDiff {
  files: { path: string; change: FileChange }[];
  /** What a bound left uncertain, for the answer's notes. */
  notes: string[];
}

/** Bytes read to hash files when a root has no index. */
export const MAX_HASHED_BYTES = 256 * 1024 * 1024;
/** Paths walked per root when it has no index. */
const MAX_WALKED = 200_000;

interface Listed {
  /** path → a value equal between the two roots iff the file is the same (blob id, or size until hashed). */
  ids: Map<string, string>;
  indexed: boolean;
}

/** The files of two stored trees that were added, modified or removed, sorted by path. */
export async function diffTrees(baseTreeDir: string, headTreeDir: string): Promise<TreeDiff> {
  const [a, b] = await Promise.all([listed(baseTreeDir), listed(headTreeDir)]);
  const notes: string[] = [];
  const files: TreeDiff['files'] = [];
  let budget = MAX_HASHED_BYTES;
  let unsure = 0;
  for (const [path, id] of a.ids) {
    const other = b.ids.get(path);
    if (other === undefined) files.push({ path, change: 'removed' });
    else if (a.indexed && b.indexed) {
      if (other !== id) files.push({ path, change: 'modified' });
    } else {
      const d = await differs(baseTreeDir, headTreeDir, path, id, other, a, b, (n) => (budget -= n) >= 0);
      if (d !== 'same') files.push({ path, change: 'modified' });
      if (d === 'unsure') unsure++;
    }
  }
  for (const path of b.ids.keys()) if (!a.ids.has(path)) files.push({ path, change: 'added' });
  if (unsure > 0)
    notes.push(
      `A root has no tree index (stored by an older lspd) and hashing stopped at ${MAX_HASHED_BYTES} bytes: ${unsure} same-sized files were counted as modified unread.`,
    );
  files.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0));
  return { files, notes };
}

async function listed(treeDir: string): Promise<Listed> {
  const entries = await readTreeIndex(dirname(treeDir));
  if (entries) return { ids: idsOf(entries), indexed: true };
  return { ids: await walk(treeDir), indexed: false };
}

function idsOf(entries: readonly TreeEntry[]): Map<string, string> {
  const ids = new Map<string, string>();
  // Symlinks are files to git (their target is the blob): a changed target is a change.
  for (const e of entries) if (e.kind !== 'dir') ids.set(e.path, `${e.kind === 'symlink' ? 'l' : e.kind === 'exec' ? 'x' : 'f'}${e.id}`);
  return ids;
}

/** Regular files by size (`s<size>`), symlinks by target (`l<target>`), breadth-first, bounded. */
async function walk(top: string): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  let level = [''];
  while (level.length > 0 && ids.size < MAX_WALKED) {
    const next: string[] = [];
    for (const rel of level) {
      for (const e of await readdir(join(top, rel), { withFileTypes: true }).catch(() => [])) {
        const p = rel === '' ? e.name : `${rel}/${e.name}`;
        if (e.isDirectory()) next.push(p);
        else if (e.isSymbolicLink()) ids.set(p, `l${await readlink(join(top, p)).catch(() => '')}`);
        else if (e.isFile()) ids.set(p, `s${(await lstat(join(top, p)).catch(() => undefined))?.size ?? -1}`);
      }
    }
    level = next;
  }
  return ids;
}

async function differs(
  baseDir: string,
  headDir: string,
  path: string,
  a: string,
  b: string,
  la: Listed,
  lb: Listed,
  charge: (bytes: number) => boolean,
): Promise<'same' | 'differs' | 'unsure'> {
  // Both walked: a size or kind apart is a change. One side indexed: compare contents by hash of both.
  if (la.indexed === lb.indexed && a !== b) return 'differs';
  if (a.startsWith('l') || b.startsWith('l')) return a === b ? 'same' : 'differs';
  const size = Number((la.indexed ? b : a).slice(1));
  // Past the budget the safe side: counted as modified (it is then diffed like one).
  if (!charge(2 * Math.max(0, size))) return 'unsure';
  const [ha, hb] = await Promise.all([hash(join(baseDir, path)), hash(join(headDir, path))]);
  return ha !== hb ? 'differs' : 'same';
}

function hash(file: string): Promise<string> {
  return new Promise((resolve) => {
    const h = createHash('sha256');
    createReadStream(file)
      .on('data', (c) => h.update(c))
      .on('end', () => resolve(h.digest('hex')))
      .on('error', () => resolve(`unreadable:${file.length}`));
  });
}
