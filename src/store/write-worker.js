// @ts-check
// The store's writer thread: applies each upload's records (write-protocol.ts) in
// tar order with plain synchronous syscalls, the way `tar -x` does. One thread
// writing in order costs one open/write/close per file; the same work through
// libuv's pool cost three thread hops per file and ran at a third of tar's speed
// (bench/upload).
//
// Plain JavaScript (type-checked through JSDoc), not TypeScript: a thread running
// .ts must load tsx itself (Node 20 does not run --import in workers), which cost
// ~300 ms and ~20 MiB per thread plus an esbuild service process forked from it.
// So this file imports nothing of ours; the record codes are repeated from
// write-protocol.ts (src/store/tree-writer.test.ts writes every record through it).
//
// Every path was admitted by EntryChecker on the main thread, so nothing here
// follows a link: directories are created one level at a time by this writer
// alone, and files are created with O_EXCL ('wx').
//
// It also hashes what it writes (the git blob id of each file and symlink,
// git-tree.ts), while the bytes are at hand: on the main thread the same work
// would slow the tar parser, which is what bounds an upload's speed.
//
// An incremental upload (store.ts) first writes its layer like any upload, then
// LINKIN records hard-link the base root's unchanged files beside it. link(2)
// never follows a symlink on Linux (a symlink is linked as itself), the base
// path was admitted when the base was stored, and nothing ever opens a linked
// file for writing: the layer's own files were created before any link, with
// O_EXCL, and no path is both.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { join } from 'node:path';
import { parentPort } from 'node:worker_threads';

/** The record codes of write-protocol.ts `Op`. */
const OP_DIR = 1;
const OP_FILE = 2;
const OP_OPEN = 3;
const OP_APPEND = 4;
const OP_CLOSE = 5;
const OP_SYMLINK = 6;
const OP_LINK = 7;
const OP_LINKIN = 8;
const OP_COPYROOM = 9;
/** write-protocol.ts COPY_ROOM_CODE. */
const COPY_ROOM_CODE = 'ELSPD_COPY_ROOM';
/** A symlink target this long or longer takes a block (disk-charge.ts). */
const FAST_SYMLINK_BYTES = 60;

const DIR_MODE = 0o755;

/**
 * @typedef {import('./write-protocol.js').WriteBatch} WriteBatch
 * @typedef {import('./write-protocol.js').WriteReply} WriteReply
 * @typedef {{
 *   root: string,
 *   fixModes: boolean,
 *   base: string | undefined,
 *   dirs: Set<string>,
 *   fd: number | undefined,
 *   fdMode: number,
 *   hash: import('node:crypto').Hash | undefined,
 *   digests: Buffer[],
 *   failed: WriteReply['error'],
 *   copyRoom: number,
 *   blockBytes: number,
 *   copied: number,
 * }} Job  dirs: directories this job made (and the root); fd, fdMode, hash: the large file
 *   being streamed; digests: blob ids completed in the current batch; copyRoom: the disk
 *   LINKIN copies may take (0 until a COPYROOM record), copied: what they took
 */

/** @type {Map<number, Job>} */
const jobs = new Map();

if (parentPort) {
  const port = parentPort;
  port.on('message', (/** @type {WriteBatch} */ b) => {
    const reply = handle(b);
    port.postMessage(reply, reply.digests ? [reply.data, reply.digests] : [reply.data]);
  });
  port.postMessage('ready');
}

/**
 * @param {WriteBatch} b
 * @returns {WriteReply}
 */
function handle(b) {
  let job = jobs.get(b.job);
  if (!job && b.start) {
    job = {
      root: b.start.root,
      fixModes: b.start.fixModes,
      base: b.start.base,
      dirs: new Set(['']),
      fd: undefined,
      fdMode: 0,
      hash: undefined,
      digests: [],
      failed: undefined,
      copyRoom: 0,
      blockBytes: 4096,
      copied: 0,
    };
    jobs.set(b.job, job);
  }
  /** @type {WriteReply} */
  const reply = { job: b.job, seq: b.seq, data: b.data };
  if (!job) {
    reply.error = { message: `writer thread: unknown job ${b.job}` };
    return reply;
  }
  if (!job.failed) {
    try {
      apply(job, Buffer.from(b.data, 0, b.bytes));
    } catch (err) {
      const e = /** @type {NodeJS.ErrnoException} */ (err);
      job.failed = { ...(e.code ? { code: e.code } : {}), message: e.message };
    }
  }
  if (job.failed) {
    closeOpen(job);
    reply.error = job.failed;
  } else if (job.digests.length > 0) {
    // A fresh ArrayBuffer of its own: it is moved to the main thread.
    const out = new Uint8Array(job.digests.length * 20);
    job.digests.forEach((d, i) => out.set(d, i * 20));
    reply.digests = out.buffer;
  }
  if (job.copied > 0) reply.copiedBytes = job.copied;
  job.digests = [];
  if (b.end) {
    closeOpen(job);
    jobs.delete(b.job);
  }
  return reply;
}

/**
 * @param {Job} job
 * @param {Buffer} buf
 */
function apply(job, buf) {
  let off = 0;
  const u16 = () => ((off += 2), buf.readUInt16LE(off - 2));
  const u32 = () => ((off += 4), buf.readUInt32LE(off - 4));
  const str = () => {
    const len = u32();
    return buf.toString('utf8', off, (off += len));
  };
  const bytes = () => {
    const len = u32();
    return buf.subarray(off, (off += len));
  };
  while (off < buf.length) {
    const op = buf[off++];
    switch (op) {
      case OP_DIR:
        ensureDir(job, str());
        break;
      case OP_FILE: {
        const mode = u16();
        const fd = create(job, str(), mode);
        try {
          const data = bytes();
          job.digests.push(createHash('sha1').update(blobHeader(data.length)).update(data).digest());
          writeAll(fd, data);
          if (job.fixModes) fs.fchmodSync(fd, mode);
        } finally {
          fs.closeSync(fd);
        }
        break;
      }
      case OP_OPEN: {
        job.fdMode = u16();
        const size = buf.readDoubleLE(off);
        off += 8;
        job.fd = create(job, str(), job.fdMode);
        job.hash = createHash('sha1').update(blobHeader(size));
        break;
      }
      case OP_APPEND: {
        const data = bytes();
        writeAll(openFd(job), data);
        job.hash?.update(data);
        break;
      }
      case OP_CLOSE: {
        const fd = openFd(job);
        job.fd = undefined;
        if (job.hash) job.digests.push(job.hash.digest());
        job.hash = undefined;
        try {
          if (job.fixModes) fs.fchmodSync(fd, job.fdMode);
        } finally {
          fs.closeSync(fd);
        }
        break;
      }
      case OP_SYMLINK: {
        const path = str();
        ensureDir(job, parentOf(path));
        const target = str();
        fs.symlinkSync(target, join(job.root, path));
        const t = Buffer.from(target);
        job.digests.push(createHash('sha1').update(blobHeader(t.length)).update(t).digest());
        break;
      }
      case OP_LINK: {
        const path = str();
        ensureDir(job, parentOf(path));
        fs.linkSync(join(job.root, str()), join(job.root, path));
        break;
      }
      case OP_LINKIN: {
        const path = str();
        if (job.base === undefined) throw new Error('writer thread: LINKIN without a base');
        ensureDir(job, parentOf(path));
        linkIn(job, join(job.base, path), join(job.root, path), path);
        break;
      }
      case OP_COPYROOM: {
        job.copyRoom = buf.readDoubleLE(off);
        off += 8;
        job.blockBytes = u32();
        break;
      }
      default:
        throw new Error(`writer thread: unknown record ${op} at ${off - 1}`);
    }
  }
}

/**
 * @param {Job} job
 * @param {string} path
 * @param {number} mode
 */
function create(job, path, mode) {
  ensureDir(job, parentOf(path));
  return fs.openSync(join(job.root, path), 'wx', mode);
}

/**
 * Hard-link a base file. A file linked by too many roots (EMLINK: ext4 allows
 * 65000 links) or a base on another filesystem (EXDEV) is copied instead, with its
 * mode (a reflink where the filesystem can), but only while the copies fit the
 * job's COPYROOM: a copy is real disk the org is charged, and checked before it
 * is made (a reflink is charged as a copy too: it may be one).
 * @param {Job} job
 * @param {string} from
 * @param {string} to
 * @param {string} path
 */
function linkIn(job, from, to, path) {
  try {
    fs.linkSync(from, to);
  } catch (err) {
    const code = /** @type {NodeJS.ErrnoException} */ (err).code;
    if (code !== 'EMLINK' && code !== 'EXDEV') throw err;
    const st = fs.lstatSync(from);
    const link = st.isSymbolicLink();
    const cost = link ? (st.size >= FAST_SYMLINK_BYTES ? job.blockBytes : 0) : Math.ceil(st.size / job.blockBytes) * job.blockBytes;
    if (job.copied + cost > job.copyRoom) {
      throw Object.assign(new Error(`copying ${path} (${code}) would pass the room left for copies`), { code: COPY_ROOM_CODE });
    }
    if (link) fs.symlinkSync(fs.readlinkSync(from), to);
    else fs.copyFileSync(from, to, fs.constants.COPYFILE_EXCL | fs.constants.COPYFILE_FICLONE);
    job.copied += cost;
  }
}

/** git's header before a blob's bytes (git-tree.ts blobHeader). @param {number} size */
function blobHeader(size) {
  return `blob ${size}\0`;
}

/** @param {Job} job */
function openFd(job) {
  if (job.fd === undefined) throw new Error('writer thread: no file is open');
  return job.fd;
}

/**
 * @param {Job} job
 * @param {string} dir
 */
function ensureDir(job, dir) {
  if (job.dirs.has(dir)) return;
  ensureDir(job, parentOf(dir));
  const abs = join(job.root, dir);
  fs.mkdirSync(abs, { mode: DIR_MODE });
  if (job.fixModes) fs.chmodSync(abs, DIR_MODE);
  job.dirs.add(dir);
}

/** @param {Job} job */
function closeOpen(job) {
  job.hash = undefined;
  if (job.fd === undefined) return;
  try {
    fs.closeSync(job.fd);
  } catch {
    // already failed; the caller removes the whole staging dir
  }
  job.fd = undefined;
}

/** @param {string} path */
function parentOf(path) {
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

/**
 * write until every byte is written (a regular file takes fewer only when the disk fills).
 * @param {number} fd
 * @param {Buffer} buf
 */
function writeAll(fd, buf) {
  let off = 0;
  while (off < buf.length) {
    const n = fs.writeSync(fd, buf, off, buf.length - off);
    if (n === 0) throw Object.assign(new Error('write made no progress'), { code: 'ENOSPC' });
    off += n;
  }
}
