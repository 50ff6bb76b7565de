// Reading a range of lines of a stored file for GET /v1/roots/{...}/files/{path}
// and the read_file tool: a tree file, or a fetched dependency file named by the
// `read` an `external` location carries.
//
// Where a read may land: a tree path only inside the root's tree; a deps path only
// inside one of the directories SERVE binds for the root (the fetch's checked
// mounts: node_modules, GOMODCACHE, site-packages, vendor/), never elsewhere in the
// deps dir (caches, state, logs) and never outside it. Both are resolved
// (realpath) and must stay under the resolved top: a link may point elsewhere
// inside, never out (the store refuses such links in a tree; a fetched package is
// written by a jailed process and may hold any link). The file is then opened
// O_NOFOLLOW and must be a regular file.
//
// Bounded: the file is read in chunks, never whole; only the lines asked for are
// kept, and only up to the answer's byte bound (cut at a line boundary). The rest
// is read only to count lines (`total_lines`) and to check it is UTF-8, so a file
// is refused 415 whatever range is asked. Lines are counted as LSP counts them
// (\n, \r\n and \r each end one), so they match the lines of every location.
// What that whole read learned (valid UTF-8, its line count) is kept per file
// version (device, inode, size, mtime and ctime in ns: a deleted root's inode reused
// by a new upload is another ctime), so paging through a file reads it only as far
// as the page: a 256 MiB file of short lines costs one full scan, not one a page.
import { open, realpath } from 'node:fs/promises';
import { LRUCache } from 'lru-cache';
import { constants } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { errors } from '../../errors.js';
import { truncateUtf8 } from '../wire/encoding.js';
import { isUnder, normalizeJailPath, type HostDirs } from './paths.js';
import { DEPS_AT, TREE_AT } from '../../jail/layout.js';
import type { FileAnswer } from '../../api/responses.js';

export type ReadFrom = 'tree' | 'deps';

/** What an `external` location carries so the files route can serve its file. */
export type ReadRef = {
  from: ReadFrom;
  path: string;
};

/**
 * The files-route reference of an in-jail path: a path under a dependency bind is
 * named by where it is in the root's deps dir (`npm/top/node_modules/zod/lib/x.d.ts`),
 * never by a host path; a file of the tree itself (a committed node_modules) by its
 * tree path. undefined for anything else. Pure: the route checks what it names.
 */
export function readRefOf(jailPath: string, dirs: HostDirs): ReadRef | undefined {
  const p = normalizeJailPath(jailPath);
  if (p === undefined) return undefined;
  let best: { host: string; at: string } | undefined;
  for (const m of dirs.mounts ?? []) if (isUnder(p, m.at) && (!best || m.at.length > best.at.length)) best = m;
  if (best && dirs.depsHostDir !== undefined) {
    // A borrowed bind (fetch/borrow.ts) is named as this root's own copy of it will be.
    for (const deps of [dirs.depsHostDir, ...(dirs.lentDeps ?? [])]) {
      const rel = relative(deps, join(best.host, p.slice(best.at.length)));
      if (rel !== '' && rel.split(sep)[0] !== '..' && !rel.startsWith(sep)) return { from: 'deps', path: rel.split(sep).join('/') };
    }
    return undefined;
  }
  if (isUnder(p, DEPS_AT) && p !== DEPS_AT) return { from: 'deps', path: p.slice(DEPS_AT.length + 1) };
  if (isUnder(p, TREE_AT) && p !== TREE_AT) return { from: 'tree', path: p.slice(TREE_AT.length + 1) };
  return undefined;
}

/** An external location's `read` field, when the projection can name one (spread into the location). */
export function readOf<C extends { jailPath: string }>(coord: C, ctx: { readRef?: (coord: C) => ReadRef | undefined }): { read?: ReadRef } {
  const r = ctx.readRef?.(coord);
  return r ? { read: r } : {};
}

/** The host directories a read from `from` may land in (tree: the tree; deps: each dependency bind of the root). */
export function readableTops(from: ReadFrom, dirs: HostDirs): string[] {
  if (from === 'tree') return [dirs.treeHostDir];
  const deps = dirs.depsHostDir;
  if (deps === undefined) return [];
  return (dirs.mounts ?? []).map((m) => m.host).filter((h) => isUnder(h, deps) && h !== deps);
}

export interface ReadOptions {
  /** Root-relative (tree) or deps-relative path, already checked by schemas.relPath. */
  path: string;
  from: ReadFrom;
  start: number;
  end?: number;
  maxAnswerBytes: number;
  maxFileBytes: number;
}

const CHUNK_BYTES = 64 * 1024;
/** Line counts of files read whole, by file version; only files found valid UTF-8 are here. */
// Keys are daemon-made (`dev:ino:size:mtimeNs:ctimeNs`, ~60 characters): charged by length all the same, so the bound is in bytes.
const lineCounts = new LRUCache<string, number>({ max: 4096, maxSize: 1024 * 1024, sizeCalculation: (_n, key) => 2 * key.length + 64 });
/** Bytes a string takes inside a JSON string literal (escapes included). */
const jsonBytes = (s: string) => Buffer.byteLength(JSON.stringify(s)) - 2;

/** Read `o.path` from `dirs` (see the top of this file); throws no_such_file, file_too_large or not_utf8. */
export async function readFileRange(dirs: HostDirs, o: ReadOptions): Promise<FileAnswer> {
  const missing = () => errors.noSuchFile(`No file ${JSON.stringify(o.path)} in this root${o.from === 'deps' ? "'s fetched dependencies" : ''}.`);
  const base = o.from === 'tree' ? dirs.treeHostDir : dirs.depsHostDir;
  if (base === undefined) throw missing();
  const host = join(base, o.path);
  const tops = readableTops(o.from, dirs).filter((t) => isUnder(host, t) && host !== t);
  if (tops.length === 0) throw missing();
  let real: string;
  try {
    real = await realpath(host);
  } catch {
    throw missing();
  }
  let inside = false;
  for (const t of tops) {
    const top = await realpath(t).catch(() => undefined);
    if (top !== undefined && real.startsWith(top + sep)) inside = true;
  }
  if (!inside) throw missing();
  const fh = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => undefined);
  if (!fh) throw missing();
  try {
    const st = await fh.stat({ bigint: true });
    if (!st.isFile()) throw errors.noSuchFile(`${JSON.stringify(o.path)} is not a regular file.`);
    if (st.size > BigInt(o.maxFileBytes))
      throw errors.fileTooLarge(`${JSON.stringify(o.path)} is ${st.size} bytes; files of at most ${o.maxFileBytes} bytes are read.`);
    const version = `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
    const known = lineCounts.get(version);
    const lines = new LineCollector(o.start, o.end, budgetOf(o));
    const decoder = new TextDecoder('utf-8', { fatal: true });
    const decode = (bytes?: Buffer) => {
      try {
        return bytes ? decoder.decode(bytes, { stream: true }) : decoder.decode();
      } catch {
        throw errors.notUtf8(`${JSON.stringify(o.path)} is not valid UTF-8.`);
      }
    };
    const buf = Buffer.alloc(CHUNK_BYTES);
    const from = o.from === 'deps' ? { from: 'deps' as const } : {};
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, CHUNK_BYTES, null);
      if (bytesRead === 0) break;
      lines.add(decode(buf.subarray(0, bytesRead)));
      // Read whole before (valid, so many lines): the rest is known; stop at the page.
      if (known !== undefined && lines.settled()) return { path: o.path, ...from, ...lines.finish(known), untrusted: true };
    }
    lines.add(decode());
    const got = lines.finish();
    lineCounts.set(version, got.total_lines);
    return { path: o.path, ...from, ...got, untrusted: true };
  } finally {
    await fh.close();
  }
}

/** What `text` may take: the answer bound less the rest of the answer at its largest. */
function budgetOf(o: ReadOptions): number {
  const big = 10_000_000_000;
  const envelope = JSON.stringify({
    path: o.path,
    from: 'deps',
    start: big,
    end: big,
    total_lines: big,
    text: '',
    truncated: false,
    partial: true,
    untrusted: true,
  });
  return Math.max(0, o.maxAnswerBytes - Buffer.byteLength(envelope));
}

/** Lines of a decoded stream, keeping only [start, end) and only up to `budget` JSON bytes. */
class LineCollector {
  private line = 0;
  private cur = '';
  private curBytes = 0;
  private curOver = false;
  private pendingCR = false;
  private readonly kept: string[] = [];
  private used = 0;
  private full = false;
  private partial = false;

  constructor(
    private readonly start: number,
    private readonly end: number | undefined,
    private readonly budget: number,
  ) {}

  /** Nothing more will be kept: the page is complete (every wanted line ended) or the budget is spent. */
  settled(): boolean {
    return this.full || (this.end !== undefined && this.line >= this.end);
  }

  private wanted(): boolean {
    return !this.full && this.line >= this.start && (this.end === undefined || this.line < this.end);
  }

  add(s: string): void {
    let i = 0;
    if (this.pendingCR) {
      this.pendingCR = false;
      if (s.length === 0) {
        this.pendingCR = true; // the decoder's flush gave nothing: still undecided
        return;
      }
      if (s[0] === '\n') {
        this.endLine('\r\n');
        i = 1;
      } else this.endLine('\r');
    }
    const re = /[\r\n]/g;
    re.lastIndex = i;
    for (let m = re.exec(s); m; m = re.exec(s)) {
      const j = m.index;
      this.append(s, i, j);
      if (s[j] === '\n') {
        this.endLine('\n');
        i = j + 1;
      } else if (j + 1 === s.length) {
        this.pendingCR = true; // a \n may open the next chunk
        i = j + 1;
      } else if (s[j + 1] === '\n') {
        this.endLine('\r\n');
        i = j + 2;
      } else {
        this.endLine('\r');
        i = j + 1;
      }
      re.lastIndex = i;
    }
    this.append(s, i, s.length);
  }

  private append(s: string, from: number, to: number): void {
    if (from >= to || !this.wanted() || this.curOver) return;
    const seg = s.slice(from, to);
    this.cur += seg;
    this.curBytes += jsonBytes(seg);
    if (this.used + this.curBytes > this.budget) this.curOver = true;
  }

  private endLine(terminator: string): void {
    if (this.wanted()) {
      const bytes = this.curBytes + jsonBytes(terminator);
      if (!this.curOver && this.used + bytes <= this.budget) {
        this.kept.push(this.cur + terminator);
        this.used += bytes;
      } else {
        this.full = true;
        if (this.kept.length === 0) this.keepPartial();
      }
    }
    this.line++;
    this.cur = '';
    this.curBytes = 0;
    this.curOver = false;
  }

  /** Not even the first line fits: its longest prefix that does, so a huge line is still readable in part. */
  private keepPartial(): void {
    let room = this.budget;
    let cut = truncateUtf8(this.cur, room);
    while (cut.length > 0 && jsonBytes(cut) > this.budget) {
      room -= jsonBytes(cut) - this.budget;
      cut = truncateUtf8(this.cur, Math.max(0, room));
    }
    this.kept.push(cut);
    this.partial = true;
  }

  /** The answer's fields; `knownTotal`: the file's line count from an earlier whole read (this one stopped when settled). */
  finish(knownTotal?: number): { start: number; end: number; total_lines: number; text: string; truncated: boolean; partial?: true } {
    if (knownTotal === undefined) {
      if (this.pendingCR) {
        this.pendingCR = false;
        this.endLine('\r');
      }
      this.endLine(''); // the last line has no terminator (empty after a final newline)
    }
    const total = knownTotal ?? this.line;
    const start = Math.min(this.start, total);
    return {
      start,
      end: start + this.kept.length,
      total_lines: total,
      text: this.kept.join(''),
      truncated: this.full,
      ...(this.partial ? { partial: true as const } : {}),
    };
  }
}
