// A root's tree index: every entry of its stored tree (directories too, so an
// empty directory is kept), with each file's size and git blob id and each
// symlink's target. Written once beside meta.json (<root>/tree.idx) before the
// root's syncfs and rename, so it is as durable and immutable as the tree. It is
// what an incremental upload composes from (no walk of the base tree), what the
// root's git tree id is computed from, and what makes a changed-file list between
// two roots a comparison of ids.
//
// Format (compact: ~25 bytes plus the path per entry): "LSPDIDX1", then records:
//   u8 kind (1 dir, 2 file, 3 executable, 4 symlink)
//   file/executable: 20-byte blob id, f64 size;  symlink: 20-byte blob id
//   path, NUL;  symlink: target, NUL
// Paths and targets never hold NUL or other control characters (entry-check.ts).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { GitBlob } from './git-tree.js';
import { nextTurn, turnCounter } from '../util/event-loop.js';

export const TREE_INDEX = 'tree.idx';

export interface FileEntry {
  path: string;
  kind: 'file' | 'exec';
  size: number;
  /** Git blob id, 40 hex digits ('' until the writer thread answered). */
  id: string;
}
export interface SymlinkEntry {
  path: string;
  kind: 'symlink';
  target: string;
  id: string;
}
export type TreeEntry = { path: string; kind: 'dir' } | FileEntry | SymlinkEntry;

const MAGIC = Buffer.from('LSPDIDX1');
const KIND = { dir: 1, file: 2, exec: 3, symlink: 4 } as const;

/** The index's bytes; in slices (event-loop.ts): 20,000 links of 1.5 KB targets are 30 MB to write. */
export async function encodeTreeIndex(entries: readonly TreeEntry[]): Promise<Buffer> {
  const due = turnCounter();
  let len = MAGIC.length;
  for (const e of entries) {
    const n = Buffer.byteLength(e.path) + (e.kind === 'symlink' ? Buffer.byteLength(e.target) : 0);
    len += 1 + n + 1;
    if (e.kind === 'file' || e.kind === 'exec') len += 28;
    else if (e.kind === 'symlink') len += 20 + 1;
    if (due(n)) await nextTurn();
  }
  const b = Buffer.allocUnsafe(len);
  let off = MAGIC.copy(b, 0);
  for (const e of entries) {
    const start = off;
    b[off++] = KIND[e.kind];
    if (e.kind !== 'dir') {
      if (b.write(e.id, off, 'hex') !== 20) throw new Error(`tree index: no blob id for ${e.path}`);
      off += 20;
    }
    if (e.kind === 'file' || e.kind === 'exec') off = b.writeDoubleLE(e.size, off);
    off += b.write(e.path, off, 'utf8');
    b[off++] = 0;
    if (e.kind === 'symlink') {
      off += b.write(e.target, off, 'utf8');
      b[off++] = 0;
    }
    if (due(off - start)) await nextTurn();
  }
  return b;
}

export class BadTreeIndex extends Error {
  override name = 'BadTreeIndex';
}

export function decodeTreeIndex(b: Buffer): TreeEntry[] {
  return [...records(b)];
}

function* records(b: Buffer): Generator<TreeEntry> {
  if (b.length < MAGIC.length || !b.subarray(0, MAGIC.length).equals(MAGIC)) throw new BadTreeIndex('not a tree index');
  let off = MAGIC.length;
  const cstr = (): string => {
    const end = b.indexOf(0, off);
    if (end < 0) throw new BadTreeIndex('truncated tree index');
    const s = b.toString('utf8', off, end);
    off = end + 1;
    return s;
  };
  const id = (): string => {
    if (off + 20 > b.length) throw new BadTreeIndex('truncated tree index');
    return b.toString('hex', off, (off += 20));
  };
  while (off < b.length) {
    const kind = b[off++];
    switch (kind) {
      case KIND.dir:
        yield { path: cstr(), kind: 'dir' };
        break;
      case KIND.file:
      case KIND.exec: {
        const i = id();
        if (off + 8 > b.length) throw new BadTreeIndex('truncated tree index');
        const size = b.readDoubleLE(off);
        off += 8;
        yield { path: cstr(), kind: kind === KIND.file ? 'file' : 'exec', size, id: i };
        break;
      }
      case KIND.symlink: {
        const i = id();
        const path = cstr();
        yield { path, kind: 'symlink', target: cstr(), id: i };
        break;
      }
      default:
        throw new BadTreeIndex(`unknown record kind ${kind}`);
    }
  }
}

/** A stored root's index, or undefined when it has none (stored before lspd kept one) or it is unreadable. */
export async function readTreeIndex(rootDir: string): Promise<TreeEntry[] | undefined> {
  try {
    const b = await readFile(join(rootDir, TREE_INDEX));
    // Decoded in slices: a tree of LSPD_MAX_TREE_FILES entries is ~11 MB and ~250 ms of decoding.
    const out: TreeEntry[] = [];
    const due = turnCounter();
    for (const e of records(b)) {
      out.push(e);
      if (due(e.path.length + (e.kind === 'symlink' ? e.target.length : 0))) await nextTurn();
    }
    return out;
  } catch {
    return undefined;
  }
}

/** The blobs git would see in this tree: files and symlinks; directories are implied. */
export function* gitBlobs(entries: Iterable<TreeEntry>): Generator<GitBlob> {
  for (const e of entries) {
    if (e.kind === 'file') yield { path: e.path, mode: '100644', id: e.id };
    else if (e.kind === 'exec') yield { path: e.path, mode: '100755', id: e.id };
    else if (e.kind === 'symlink') yield { path: e.path, mode: '120000', id: e.id };
  }
}

/** Add an entry for every directory the entries imply but do not list (their parents); in slices. */
export async function withParents(entries: TreeEntry[]): Promise<TreeEntry[]> {
  const due = turnCounter();
  const dirs = new Set<string>();
  for (const e of entries) {
    if (e.kind === 'dir') dirs.add(e.path);
    if (due()) await nextTurn();
  }
  const implied: TreeEntry[] = [];
  for (const e of entries) {
    for (let i = e.path.lastIndexOf('/'); i > 0; i = e.path.lastIndexOf('/', i - 1)) {
      const d = e.path.slice(0, i);
      if (dirs.has(d)) continue; // listed dirs may lack their own parents: keep climbing
      dirs.add(d);
      implied.push({ path: d, kind: 'dir' });
    }
    if (due(e.path.length)) await nextTurn();
  }
  return implied.length === 0 ? entries : [...implied, ...entries];
}
