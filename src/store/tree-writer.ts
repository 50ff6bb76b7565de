// Writes admitted entries into a fresh staging directory, fast: small files are
// written in the background (bounded in count and bytes) so the tar parser can
// move on to the next header while the thread pool does open/write/close, and
// large files stream with double-buffered writev. Every path it is given was
// admitted by EntryChecker, so it never follows a link: directories are created
// one level at a time by this writer alone, and files are created with O_EXCL.
//
// Whatever creates a name (open O_CREAT, mkdir, symlink, link) takes the parent
// directory's lock in the kernel, and threads that queue on it spin
// (rwsem_spin_on_owner: measured as the largest kernel cost with parallel creates
// in one directory). So creates are serialized per parent directory here, while
// the data writes and closes of those files still run in parallel.
import * as fs from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { errors } from '../errors.js';

const mkdir = promisify(fs.mkdir);
const chmod = promisify(fs.chmod);
const open = promisify(fs.open);
const close = promisify(fs.close);
const writev = promisify(fs.writev);
const fchmod = promisify(fs.fchmod);
const symlink = promisify(fs.symlink);
const link = promisify(fs.link);

/** Files up to this size are read whole and written in the background. */
export const SMALL_FILE_BYTES = 64 * 1024;
// A few more than libuv's 4 threads, so none idles while the main thread turns around;
// many more only adds contention on the directory lock (creates in one dir serialize).
const MAX_INFLIGHT_OPS = 8;
const MAX_INFLIGHT_BYTES = 8 * 1024 * 1024;
/** Large files are written in batches of about this much. */
const BATCH_BYTES = 512 * 1024;

const DIR_MODE = 0o755;
const fileMode = (executable: boolean) => (executable ? 0o755 : 0o644);

/** ENOSPC/EDQUOT become 507; anything else stays as it is (a 500, logged). */
export function storageError(err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return errors.insufficientStorage('Not enough disk space to store the tree.');
  return err;
}

export class TreeWriter {
  private readonly dirs = new Map<string, Promise<void>>([['', Promise.resolve()]]);
  /** Per parent directory, the last name-creating operation queued in it. */
  private readonly createTail = new Map<string, Promise<unknown>>();
  private readonly inflight = new Set<Promise<void>>();
  private inflightBytes = 0;
  /** Callers of room() waiting for a write to finish. */
  private waiters: (() => void)[] = [];
  private failure: unknown;

  /**
   * @param root the empty directory to fill
   * @param fixModes chmod after create: the process umask would strip group/other
   *   bits, and jails run as other uids that must be able to read the tree
   * @param onError told of the first failed background write
   */
  constructor(
    private readonly root: string,
    private readonly fixModes: boolean,
    private readonly onError: (err: unknown) => void,
  ) {}

  dir(path: string): void {
    this.track(this.dirReady(path), 0);
  }

  /** Wait until one more background write fits; call before reading a small file. */
  async room(bytes: number): Promise<void> {
    while (this.inflight.size >= MAX_INFLIGHT_OPS || (this.inflight.size > 0 && this.inflightBytes + bytes > MAX_INFLIGHT_BYTES)) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  smallFile(path: string, data: Buffer, executable: boolean): void {
    const mode = fileMode(executable);
    const abs = join(this.root, path);
    const op = this.create(parentOf(path), () => open(abs, 'wx', mode)).then(async (fd) => {
      try {
        await writeAll(fd, [data]);
        if (this.fixModes) await fchmod(fd, mode);
      } finally {
        await close(fd);
      }
    });
    this.track(op, data.length);
  }

  /** Stream one large file; resolves with its length once it is written and closed. */
  largeFile(path: string, chunks: AsyncIterable<Buffer>, executable: boolean): Promise<number> {
    const op = this.streamFile(path, chunks, executable);
    // Tracked like the background writes, so settle() also waits for this one.
    this.track(op.then(() => {}), 0);
    return op;
  }

  private async streamFile(path: string, chunks: AsyncIterable<Buffer>, executable: boolean): Promise<number> {
    const mode = fileMode(executable);
    const abs = join(this.root, path);
    const fd = await this.create(parentOf(path), () => open(abs, 'wx', mode));
    let written = 0;
    // One writev in flight while the next batch is read from the tar stream.
    let pending: Promise<void> = Promise.resolve();
    try {
      let batch: Buffer[] = [];
      let batchBytes = 0;
      for await (const chunk of chunks) {
        batch.push(chunk);
        batchBytes += chunk.length;
        written += chunk.length;
        if (batchBytes >= BATCH_BYTES) {
          await pending;
          pending = writeAll(fd, batch);
          pending.catch(() => {}); // awaited below; this only keeps it from counting as unhandled meanwhile
          batch = [];
          batchBytes = 0;
        }
      }
      await pending;
      if (batch.length > 0) await writeAll(fd, batch);
      if (this.fixModes) await fchmod(fd, mode);
    } finally {
      await pending.catch(() => {});
      await close(fd);
    }
    return written;
  }

  symlink(path: string, target: string): void {
    const abs = join(this.root, path);
    this.track(this.create(parentOf(path), () => symlink(target, abs)), 0);
  }

  /** Hard links are rare: wait for every write so the target surely exists, then link. */
  async hardlink(path: string, target: string): Promise<void> {
    await this.settle();
    await this.create(parentOf(path), () => link(join(this.root, target), join(this.root, path)));
  }

  /** Wait for every background write; throw the first failure. */
  async settle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    if (this.failure !== undefined) throw this.failure;
  }

  private dirReady(dir: string): Promise<void> {
    let p = this.dirs.get(dir);
    if (p) return p;
    const abs = join(this.root, dir);
    p = this.create(parentOf(dir), () => mkdir(abs, { mode: DIR_MODE })).then(() => (this.fixModes ? chmod(abs, DIR_MODE) : undefined));
    p.catch(() => {}); // reported through whichever op awaits it
    this.dirs.set(dir, p);
    return p;
  }

  /** Run `fn` (which creates one name in `dir`) once `dir` exists and after every earlier create in it. */
  private create<T>(dir: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.createTail.get(dir) ?? this.dirReady(dir);
    const p = prev.then(fn);
    const tail = p.catch(() => {});
    this.createTail.set(dir, tail);
    // Forget a quiet directory, so the map holds only directories being written.
    void tail.then(() => {
      if (this.createTail.get(dir) === tail) this.createTail.delete(dir);
    });
    return p;
  }

  private track(op: Promise<void>, bytes: number): void {
    this.inflightBytes += bytes;
    const done = () => {
      this.inflight.delete(tracked);
      this.inflightBytes -= bytes;
      const waiters = this.waiters;
      this.waiters = [];
      for (const wake of waiters) wake();
    };
    const tracked: Promise<void> = op.then(done, (err: unknown) => {
      done();
      if (this.failure === undefined) {
        this.failure = storageError(err);
        this.onError(this.failure);
      }
    });
    this.inflight.add(tracked);
  }
}

function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

/** writev until every byte is written (a regular file may take fewer than asked only when the disk fills). */
async function writeAll(fd: number, bufs: Buffer[]): Promise<void> {
  let rest = bufs.filter((b) => b.length > 0);
  while (rest.length > 0) {
    let n = (await writev(fd, rest)).bytesWritten;
    if (n === 0) throw Object.assign(new Error('write made no progress'), { code: 'ENOSPC' });
    const next: Buffer[] = [];
    for (const b of rest) {
      if (n >= b.length) {
        n -= b.length;
        continue;
      }
      next.push(n > 0 ? b.subarray(n) : b);
      n = 0;
    }
    rest = next;
  }
}
