// @ts-check
// The package store's thread (package-store.ts, file-dedupe.ts): walks with
// synchronous calls on a thread of its own. `dedupe` links each file of a job's
// sealed output dirs to the org's store by content; `scan` lists (and, sweeping,
// removes) the entries of an org's store. Through promises a dedupe was ~7 pool
// operations per file on the main thread's loop and libuv's four threads (33k files
// of a node_modules: 25-31 s wall, 7.9-9.4 s CPU at load 14-21, every other org's
// file operations queued behind it; here 3.5-4 s, 1.6-2.5 s). Plain JavaScript for
// the reason store/write-worker.js gives. Never follows a link: directories are
// entered only when lstat says so, files are opened O_NOFOLLOW.
import { createHash } from 'node:crypto';
import { closeSync, constants, linkSync, lstatSync, mkdirSync, openSync, readSync, readdirSync, renameSync, rmdirSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { parentPort, threadId, workerData } from 'node:worker_threads';

if (!parentPort) throw new Error('store-worker.js runs as a worker thread');
const port = parentPort;
const job = /** @type {{ op: 'dedupe'; top: string; dirs: string[] } | { op: 'scan'; top: string; sweep: boolean; kinds: string[] }} */ (workerData);

const buf = Buffer.allocUnsafe(256 * 1024);
/** @param {string} path */
function sha256(path) {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const h = createHash('sha256');
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      h.update(buf.subarray(0, n));
    }
    return h.digest('hex');
  } finally {
    closeSync(fd);
  }
}

/** @param {unknown} err */
const code = (err) => /** @type {NodeJS.ErrnoException} */ (err).code ?? String(err);
/** @param {string} path */
const lstatOrUndefined = (path) => lstatSync(path, { throwIfNoEntry: false });

let n = 0;
const tmpName = (/** @type {string} */ dir) => join(dir, `.tmp-${process.pid}-${threadId}-${n++}`);

let linked = 0;
/** Inode and blocks of each file that became a store entry. @type {[number, number][]} */
const stored = [];
/** Why files stayed the root's own, by errno (a few). @type {Record<string, number>} */
const failed = {};

/**
 * One file: a link to the store's entry of the same bytes and mode, or the entry itself.
 * @param {string} top
 * @param {string} path
 * @param {import('node:fs').Stats} st
 */
function one(top, path, st) {
  const hex = sha256(path);
  const entry = join(top, hex.slice(0, 2), hex.slice(2) + (st.mode & 0o111 ? 'x' : ''));
  for (let attempt = 0; attempt < 2; attempt++) {
    const there = lstatOrUndefined(entry);
    if (there) {
      if (there.ino === st.ino) return;
      const tmp = tmpName(join(path, '..'));
      try {
        linkSync(entry, tmp);
      } catch (err) {
        if (code(err) === 'ENOENT') continue; // gone meanwhile: this copy becomes the entry
        throw err; // EMLINK (65,000 links), EXDEV: the root keeps its own copy
      }
      try {
        renameSync(tmp, path);
      } catch (err) {
        unlinkSync(tmp);
        throw err;
      }
      linked++;
      return;
    }
    try {
      linkSync(path, entry);
    } catch (err) {
      if (code(err) === 'EEXIST') continue;
      throw err;
    }
    stored.push([st.ino, st.blocks]);
    return;
  }
}

/**
 * Every regular file under `dir`, by lstat; directories entered, links never followed.
 * @param {string} dir
 * @param {(path: string, st: import('node:fs').Stats) => void} visit
 */
function walk(dir, visit) {
  const stack = [dir];
  while (stack.length > 0) {
    const d = /** @type {string} */ (stack.pop());
    let names;
    try {
      names = readdirSync(d);
    } catch {
      continue;
    }
    for (const name of names) {
      const p = join(d, name);
      const st = lstatOrUndefined(p);
      if (!st) continue;
      if (st.isDirectory()) stack.push(p);
      else if (st.isFile()) visit(p, st);
    }
  }
}

/** @param {string} top  the org's files/ dir */
function dedupe(top, /** @type {string[]} */ dirs) {
  for (let i = 0; i < 256; i++) mkdirSync(join(top, i.toString(16).padStart(2, '0')), { recursive: true, mode: 0o700 });
  for (const dir of dirs) {
    walk(dir, (p, st) => {
      // Sealed files the fetch made alone: not empty, root's, no other name (a store
      // link already, a donor's, or a link the jail made: left as they are).
      if (st.size === 0 || st.uid !== 0 || st.nlink !== 1) return;
      try {
        one(top, p, st);
      } catch (err) {
        failed[code(err)] = (failed[code(err)] ?? 0) + 1;
      }
    });
  }
  port.postMessage({ linked, stored, failed });
}

/**
 * The org's entries as [ino, blocks, kind] (kind: the index in `kinds` of the top
 * dir it is under; the last, files, for anything else); temp files a crash left
 * are removed, and when sweeping, so is every entry no root links (one name: the
 * store's), then the dirs left empty. What was removed comes back as `freed`.
 * @param {string} top  the org's dir
 * @param {boolean} sweep
 * @param {string[]} kinds
 */
function scan(top, sweep, kinds) {
  /** @type {[number, number, number][]} */ const kept = [];
  /** @type {[number, number, number][]} */ const freed = [];
  walk(top, (p, st) => {
    const rest = p.slice(top.length + 1);
    const at = rest.includes('/') ? kinds.indexOf(rest.slice(0, rest.indexOf('/'))) : -1;
    const kind = at < 0 ? kinds.length - 1 : at;
    if (p.slice(p.lastIndexOf('/') + 1).startsWith('.tmp-')) return void unlinkSync(p);
    if (sweep && st.nlink === 1) {
      unlinkSync(p);
      freed.push([st.ino, st.blocks, kind]);
    } else kept.push([st.ino, st.blocks, kind]);
  });
  if (sweep) {
    // Empty dirs go too (the 256 fan-out dirs are a MiB), and the org's once it holds nothing.
    const files = join(top, 'files');
    for (const d of readdirSafe(files)) tryRmdir(join(files, d));
    for (const d of [...kinds.map((k) => join(top, k)), top]) tryRmdir(d);
  }
  port.postMessage({ kept: sweep ? [] : kept, freed });
}

/** @param {string} d */
const readdirSafe = (d) => {
  try {
    return readdirSync(d);
  } catch {
    return [];
  }
};
/** @param {string} d */
const tryRmdir = (d) => {
  try {
    rmdirSync(d);
  } catch {
    // not empty, or gone
  }
};

if (job.op === 'dedupe') dedupe(job.top, job.dirs);
else scan(job.top, job.sweep, job.kinds);
