// The store's writer thread: applies each upload's operations in tar order with
// plain synchronous syscalls, the way `tar -x` does. One thread writing in order
// costs one open/write/close per file; the same work through libuv's pool cost
// three thread hops per file and ran at a third of tar's speed (bench/upload).
//
// Every path was admitted by EntryChecker on the main thread, so nothing here
// follows a link: directories are created one level at a time by this writer
// alone, and files are created with O_EXCL ('wx').
import * as fs from 'node:fs';
import { join } from 'node:path';
import { parentPort } from 'node:worker_threads';
import type { WriteBatch, WriteReply } from './write-protocol.js';

const DIR_MODE = 0o755;

interface Job {
  root: string;
  fixModes: boolean;
  /** Directories this job has made (or that exist: the root). */
  dirs: Set<string>;
  /** The large file being streamed, if any. */
  fd: number | undefined;
  fdMode: number;
  failed: WriteReply['error'];
}

const jobs = new Map<number, Job>();

parentPort!.on('message', (b: WriteBatch) => {
  let job = jobs.get(b.job);
  if (!job && b.start) {
    job = { root: b.start.root, fixModes: b.start.fixModes, dirs: new Set(['']), fd: undefined, fdMode: 0, failed: undefined };
    jobs.set(b.job, job);
  }
  const reply: WriteReply = { job: b.job, seq: b.seq, data: b.data };
  if (!job) {
    reply.error = { message: `writer thread: unknown job ${b.job}` };
  } else {
    if (!job.failed) {
      try {
        apply(job, b);
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        job.failed = { code: e.code, message: e.message };
      }
    }
    if (job.failed) {
      closeOpen(job);
      reply.error = job.failed;
    }
    if (b.end) {
      closeOpen(job);
      jobs.delete(b.job);
    }
  }
  parentPort!.postMessage(reply, [b.data]);
});

function apply(job: Job, b: WriteBatch): void {
  const data = Buffer.from(b.data);
  let off = 0;
  const take = (len: number) => data.subarray(off, (off += len));
  for (const op of b.ops) {
    switch (op.k) {
      case 'dir':
        ensureDir(job, op.path);
        break;
      case 'file': {
        const fd = create(job, op.path, op.mode);
        try {
          writeAll(fd, take(op.len));
          if (job.fixModes) fs.fchmodSync(fd, op.mode);
        } finally {
          fs.closeSync(fd);
        }
        break;
      }
      case 'open':
        job.fd = create(job, op.path, op.mode);
        job.fdMode = op.mode;
        break;
      case 'append':
        writeAll(openFd(job), take(op.len));
        break;
      case 'close': {
        const fd = openFd(job);
        job.fd = undefined;
        try {
          if (job.fixModes) fs.fchmodSync(fd, job.fdMode);
        } finally {
          fs.closeSync(fd);
        }
        break;
      }
      case 'symlink':
        ensureDir(job, parentOf(op.path));
        fs.symlinkSync(op.target, join(job.root, op.path));
        break;
      case 'link':
        ensureDir(job, parentOf(op.path));
        fs.linkSync(join(job.root, op.target), join(job.root, op.path));
        break;
    }
  }
}

function create(job: Job, path: string, mode: number): number {
  ensureDir(job, parentOf(path));
  return fs.openSync(join(job.root, path), 'wx', mode);
}

function openFd(job: Job): number {
  if (job.fd === undefined) throw new Error('writer thread: no file is open');
  return job.fd;
}

function ensureDir(job: Job, dir: string): void {
  if (job.dirs.has(dir)) return;
  ensureDir(job, parentOf(dir));
  const abs = join(job.root, dir);
  fs.mkdirSync(abs, { mode: DIR_MODE });
  if (job.fixModes) fs.chmodSync(abs, DIR_MODE);
  job.dirs.add(dir);
}

function closeOpen(job: Job): void {
  if (job.fd === undefined) return;
  try {
    fs.closeSync(job.fd);
  } catch {
    // already failed; the caller removes the whole staging dir
  }
  job.fd = undefined;
}

function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

/** write until every byte is written (a regular file takes fewer only when the disk fills). */
function writeAll(fd: number, buf: Buffer): void {
  let off = 0;
  while (off < buf.length) {
    const n = fs.writeSync(fd, buf, off, buf.length - off);
    if (n === 0) throw Object.assign(new Error('write made no progress'), { code: 'ENOSPC' });
    off += n;
  }
}
