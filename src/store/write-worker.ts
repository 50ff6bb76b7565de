// The store's writer thread: applies each upload's records (write-protocol.ts) in
// tar order with plain synchronous syscalls, the way `tar -x` does. One thread
// writing in order costs one open/write/close per file; the same work through
// libuv's pool cost three thread hops per file and ran at a third of tar's speed
// (bench/upload).
//
// Every path was admitted by EntryChecker on the main thread, so nothing here
// follows a link: directories are created one level at a time by this writer
// alone, and files are created with O_EXCL ('wx').
import * as fs from 'node:fs';
import { join } from 'node:path';
import { parentPort } from 'node:worker_threads';
import { Op, type WriteBatch, type WriteReply } from './write-protocol.js';

const DIR_MODE = 0o755;

interface Job {
  root: string;
  fixModes: boolean;
  /** Directories this job has made (and the root). */
  dirs: Set<string>;
  /** The large file being streamed, if any, and its mode. */
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
        apply(job, Buffer.from(b.data, 0, b.bytes));
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

function apply(job: Job, buf: Buffer): void {
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
      case Op.Dir:
        ensureDir(job, str());
        break;
      case Op.File: {
        const mode = u16();
        const fd = create(job, str(), mode);
        try {
          writeAll(fd, bytes());
          if (job.fixModes) fs.fchmodSync(fd, mode);
        } finally {
          fs.closeSync(fd);
        }
        break;
      }
      case Op.Open:
        job.fdMode = u16();
        job.fd = create(job, str(), job.fdMode);
        break;
      case Op.Append:
        writeAll(openFd(job), bytes());
        break;
      case Op.Close: {
        const fd = openFd(job);
        job.fd = undefined;
        try {
          if (job.fixModes) fs.fchmodSync(fd, job.fdMode);
        } finally {
          fs.closeSync(fd);
        }
        break;
      }
      case Op.Symlink: {
        const path = str();
        ensureDir(job, parentOf(path));
        fs.symlinkSync(str(), join(job.root, path));
        break;
      }
      case Op.Link: {
        const path = str();
        ensureDir(job, parentOf(path));
        fs.linkSync(join(job.root, str()), join(job.root, path));
        break;
      }
      default:
        throw new Error(`writer thread: unknown record ${op} at ${off - 1}`);
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
