// The file a query targets, checked before any server sees it (API.md: 404
// no_such_file, 413 file_too_large, 415 not_utf8), and the workspace it belongs to:
// the nearest ancestor directory holding one of its server's root markers, else the
// tree's top (DESIGN.md "Language servers": a monorepo with three Go modules gets
// three gopls workspaces). Roots are immutable, so both are cached, keyed by the
// root's identity and generation and dropped with the root.
import { open, readdir, realpath, stat } from 'node:fs/promises';
import { constants } from 'node:fs';
import { join, posix, sep } from 'node:path';
import { errors } from '../errors.js';
import { RootCache, type RootRef } from '../store/root-cache.js';
import { splitLines } from './wire/encoding.js';

export interface TargetFile {
  /** Root-relative path as asked. */
  path: string;
  text: string;
  /** The text split into lines (no terminators), for position conversion. */
  lines: string[];
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Read a root-relative file: it must resolve inside the tree (a link inside the
 * tree may point elsewhere in it, never out), be a regular file of at most
 * maxBytes, and be valid UTF-8. The path was already checked by the schema
 * (relative, no `..`, no control characters).
 */
export async function readTarget(treeDir: string, rel: string, maxBytes: number): Promise<TargetFile> {
  let real: string;
  let top: string;
  try {
    top = await realpath(treeDir);
    real = await realpath(join(treeDir, rel));
  } catch {
    throw errors.noSuchFile(`No file ${JSON.stringify(rel)} in this root.`);
  }
  if (!real.startsWith(top + sep)) throw errors.noSuchFile(`No file ${JSON.stringify(rel)} in this root.`);
  // O_NOFOLLOW on the resolved path: nothing in an immutable root can swap it, but
  // the check costs nothing and a symlink here would mean the store was bypassed.
  const fh = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined);
  if (!fh) throw errors.noSuchFile(`No file ${JSON.stringify(rel)} in this root.`);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw errors.noSuchFile(`${JSON.stringify(rel)} is not a regular file.`);
    if (st.size > maxBytes) throw errors.fileTooLarge(`${JSON.stringify(rel)} is ${st.size} bytes; queries may target files of at most ${maxBytes} bytes.`);
    const buf = Buffer.alloc(st.size);
    const { bytesRead } = await fh.read(buf, 0, st.size, 0);
    let text: string;
    try {
      text = decoder.decode(buf.subarray(0, bytesRead));
    } catch {
      throw errors.notUtf8(`${JSON.stringify(rel)} is not valid UTF-8.`);
    }
    return { path: rel, text, lines: splitLines(text) };
  } finally {
    await fh.close();
  }
}

/** A line of a target file: a V8 sliced string of its text (header and pointer), and its slot in the array. */
const LINE_SLICE_BYTES = 40;

/**
 * Checked target files, kept: a root never changes, so a file that passed once
 * passes again with the same text. Bounded by the text held. Failures are not kept.
 */
export class TargetCache {
  private readonly cache: RootCache<TargetFile>;
  private readonly onRead: ((root: RootRef, treeDir: string, t: TargetFile) => void) | undefined;

  /**
   * `maxBytes`: most bytes held (LSPD_FILE_CACHE_BYTES's share): its text, and its lines
   * (slices of the text, each with its own header). `onRead`: a file just read and
   * checked (not a hit: what a hit holds was handed over when it was read).
   */
  constructor(maxBytes: number, onRead?: (root: RootRef, treeDir: string, t: TargetFile) => void) {
    this.cache = new RootCache<TargetFile>({ max: 4096, maxBytes, sizeOf: (t) => t.text.length * 2 + t.path.length * 2 + t.lines.length * LINE_SLICE_BYTES });
    this.onRead = onRead;
  }

  get bytes(): number {
    return this.cache.bytes;
  }

  async read(root: RootRef, treeDir: string, rel: string, maxBytes: number): Promise<TargetFile> {
    const hit = this.cache.get(root, rel);
    if (hit && hit.text.length <= maxBytes) return hit;
    const t = await readTarget(treeDir, rel, maxBytes);
    this.cache.set(root, rel, t);
    this.onRead?.(root, treeDir, t);
    return t;
  }

  dropRoot(rootId: string): void {
    this.cache.dropRoot(rootId);
  }
}

/**
 * How many directories above a file are looked at for a marker: a tree can be 1500
 * directories deep (3 KiB names), and every look-up there walks that deep in the
 * kernel, so an unbounded search cost O(depth² × markers) (1.1 s for one query at
 * depth 1000, and synchronous it held the event loop for all of it). Past the bound
 * the workspace is the tree's top, which it would be anyway unless a marker sits
 * more than this many levels above the file.
 */
export const MAX_WORKSPACE_LEVELS = 128;

export class WorkspaceFinder {
  /** Keys hold a tree path (up to the store's path bound): charged by length, so long paths cannot make 10,000 entries large. */
  private readonly cache = new RootCache<string>({ max: 10_000, maxBytes: 8 * 1024 * 1024, sizeOf: (ws) => ws.length * 2 });

  get bytes(): number {
    return this.cache.bytes;
  }

  /** Root-relative workspace directory of `rel` for a server with these markers ('' = tree top). */
  async find(root: RootRef, treeDir: string, rel: string, markers: readonly string[]): Promise<string> {
    const key = `${markers.join('\u0000')}\u0000${rel}`;
    const hit = this.cache.get(root, key);
    if (hit !== undefined) return hit;
    let dir = posix.dirname(rel);
    let found = '';
    // Off the event loop (fs.promises), level by level, markers of a level at once.
    for (let level = 0; level < MAX_WORKSPACE_LEVELS; level++) {
      const d = dir === '.' ? '' : dir;
      const present = await Promise.all(
        markers.map((m) =>
          stat(join(treeDir, d, m)).then(
            () => true,
            () => false,
          ),
        ),
      );
      if (present.includes(true)) {
        found = d;
        break;
      }
      if (d === '') break;
      dir = posix.dirname(dir);
    }
    this.cache.set(root, key, found);
    return found;
  }

  dropRoot(rootId: string): void {
    this.cache.dropRoot(rootId);
  }
}

/** Directories never searched for a representative file (dependencies, VCS, caches). */
export const SKIP_DIRS: ReadonlySet<string> = new Set(['node_modules', '.git', '__pycache__', '.venv', 'venv', 'dist', 'build', 'target', 'vendor']);

/**
 * A file of one of `languages` near the top of the tree (breadth first, at most
 * maxEntries directory entries looked at): what workspaceSymbols opens so a server
 * that builds projects from open files (TypeScript) has one loaded.
 */
export async function findFileOf(treeDir: string, accept: (rel: string) => boolean, maxEntries = 5000): Promise<string | undefined> {
  const queue = [''];
  let seen = 0;
  while (queue.length > 0 && seen < maxEntries) {
    const dir = queue.shift()!;
    const entries = await readdir(join(treeDir, dir), { withFileTypes: true }).catch(() => []);
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (++seen > maxEntries) break;
      const rel = dir === '' ? e.name : `${dir}/${e.name}`;
      if (e.isFile() && accept(rel)) return rel;
      if (e.isDirectory() && !e.name.startsWith('.') && !SKIP_DIRS.has(e.name)) queue.push(rel);
    }
  }
  return undefined;
}
