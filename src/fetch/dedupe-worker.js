// @ts-check
// The dedupe thread (file-dedupe.ts): walks a job's sealed output dirs and links
// each file to the org's package store by content, with synchronous calls on this
// thread. Through promises the same work was ~7 pool operations per file on the
// main thread's loop and libuv's four threads (33k files of a node_modules: 9.4 s of
// CPU at load 21, every other org's file operations queued behind it). Plain
// JavaScript for the reason store/write-worker.js gives. Never follows a link:
// directories are entered only when lstat says so, files are opened O_NOFOLLOW.
import { createHash } from 'node:crypto';
import { closeSync, constants, linkSync, lstatSync, mkdirSync, openSync, readSync, readdirSync, renameSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { parentPort, threadId, workerData } from 'node:worker_threads';

if (!parentPort) throw new Error('dedupe-worker.js runs as a worker thread');
const { top, dirs } = /** @type {{ top: string; dirs: string[] }} */ (workerData);

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
 * @param {string} path
 * @param {import('node:fs').Stats} st
 */
function one(path, st) {
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

for (let i = 0; i < 256; i++) mkdirSync(join(top, i.toString(16).padStart(2, '0')), { recursive: true, mode: 0o700 });
for (const dir of dirs) {
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
      // Sealed files the fetch made alone: not empty, root's, no other name (a store
      // link already, a donor's, or a link the jail made: left as they are).
      else if (st.isFile() && st.size > 0 && st.uid === 0 && st.nlink === 1) {
        try {
          one(p, st);
        } catch (err) {
          failed[code(err)] = (failed[code(err)] ?? 0) + 1;
        }
      }
    }
  }
}
parentPort.postMessage({ linked, stored, failed });
