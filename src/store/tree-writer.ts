// Writes admitted entries into a fresh staging directory. The main thread only
// batches: each operation (in tar order) and its bytes go into a batch that is
// handed to a writer thread (write-worker.ts) when it is full or at the end of
// the turn, so the tar parser moves on while the thread does the syscalls.
// Batches not yet applied are bounded in bytes: room() makes the parser wait,
// which pauses the request body, so memory does not grow with the upload.
import { errors } from '../errors.js';
import { openLane, takeBuffer, type WriterLane } from './write-pool.js';
import type { WriteOp, WriteReply } from './write-protocol.js';

/** Files up to this size are read whole before they are queued. */
export const SMALL_FILE_BYTES = 64 * 1024;
/** A batch is handed over once it holds this much data or this many operations. */
const BATCH_BYTES = 256 * 1024;
const BATCH_OPS = 128;
/** Bytes handed over and not yet written, plus the batch being filled. */
const MAX_PENDING_BYTES = 8 * 1024 * 1024;

const fileMode = (executable: boolean) => (executable ? 0o755 : 0o644);

/** ENOSPC/EDQUOT become 507; anything else stays as it is (a 500, logged). */
export function storageError(err: unknown): unknown {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT') return errors.insufficientStorage('Not enough disk space to store the tree.');
  return err;
}

export class TreeWriter {
  private readonly lane: WriterLane;
  private ops: WriteOp[] = [];
  private chunks: Buffer[] = [];
  private batchBytes = 0;
  private flushQueued = false;
  private seq = 0;
  /** Bytes of each batch handed over and not yet answered. */
  private readonly unanswered = new Map<number, number>();
  private pendingBytes = 0;
  /** Callers waiting for an answer (room() and settle()). */
  private waiters: (() => void)[] = [];
  private failure: unknown;
  private closed = false;
  private lost = false;

  /**
   * @param root the empty directory to fill
   * @param fixModes chmod after create: the process umask would strip group/other
   *   bits, and jails run as other uids that must be able to read the tree
   * @param onError told of the first failed write
   */
  constructor(
    private readonly root: string,
    private readonly fixModes: boolean,
    private readonly onError: (err: unknown) => void,
  ) {
    this.lane = openLane({ onReply: (r) => this.answered(r), onThreadLost: (err) => this.threadLost(err) });
  }

  dir(path: string): void {
    this.push({ k: 'dir', path });
  }

  /** Wait until `bytes` more fit; call before reading a small file, or between chunks of a large one. */
  async room(bytes: number): Promise<void> {
    while (this.failure === undefined && this.unanswered.size > 0 && this.pendingBytes + this.batchBytes + bytes > MAX_PENDING_BYTES) {
      this.flush();
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  smallFile(path: string, data: Buffer[], size: number, executable: boolean): void {
    this.push({ k: 'file', path, mode: fileMode(executable), len: size }, data, size);
  }

  /** Stream one large file; resolves with its length once every chunk is queued. */
  async largeFile(path: string, chunks: AsyncIterable<Buffer>, executable: boolean): Promise<number> {
    this.push({ k: 'open', path, mode: fileMode(executable) });
    let written = 0;
    for await (const chunk of chunks) {
      await this.room(chunk.length);
      this.push({ k: 'append', len: chunk.length }, [chunk], chunk.length);
      written += chunk.length;
    }
    this.push({ k: 'close' });
    return written;
  }

  symlink(path: string, target: string): void {
    this.push({ k: 'symlink', path, target });
  }

  /** The target was written earlier in the same ordered stream, so it exists. */
  hardlink(path: string, target: string): void {
    this.push({ k: 'link', path, target });
  }

  /** Hand over what is queued, wait until the thread has written all of it, and end the job; throw the first failure. */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.flush(true);
    }
    while (this.unanswered.size > 0 && !this.lost) await new Promise<void>((resolve) => this.waiters.push(resolve));
    this.lane.release();
    if (this.failure !== undefined) throw this.failure;
  }

  private push(op: WriteOp, data?: Buffer[], bytes = 0): void {
    // Only a failed upload still parses after close (its last entry, being torn down).
    if (this.closed) return;
    this.ops.push(op);
    if (data) this.chunks.push(...data);
    this.batchBytes += bytes;
    if (this.batchBytes >= BATCH_BYTES || this.ops.length >= BATCH_OPS) this.flush();
    else if (!this.flushQueued) {
      // Whatever one turn of the parser queued goes over together.
      this.flushQueued = true;
      setImmediate(() => {
        this.flushQueued = false;
        if (!this.closed) this.flush();
      });
    }
  }

  private flush(end = false): void {
    if (this.ops.length === 0 && !end) return;
    // The bytes are copied into a buffer that is moved (not copied) to the thread;
    // moving a slice of a body chunk would drag its whole backing store along.
    const buf = takeBuffer(this.batchBytes);
    const data = Buffer.from(buf);
    let off = 0;
    for (const c of this.chunks) off += c.copy(data, off);
    const seq = this.seq++;
    const first = seq === 0;
    this.unanswered.set(seq, this.batchBytes);
    this.pendingBytes += this.batchBytes;
    this.lane.post({
      job: this.lane.job,
      seq,
      ...(first ? { start: { root: this.root, fixModes: this.fixModes } } : {}),
      ops: this.ops,
      data: buf,
      ...(end ? { end: true } : {}),
    });
    this.ops = [];
    this.chunks = [];
    this.batchBytes = 0;
  }

  private answered(r: WriteReply): void {
    this.pendingBytes -= this.unanswered.get(r.seq) ?? 0;
    this.unanswered.delete(r.seq);
    if (r.error) this.fail(Object.assign(new Error(r.error.message), { code: r.error.code }));
    this.wake();
  }

  private threadLost(err: Error): void {
    this.lost = true;
    this.fail(err);
    this.wake();
  }

  private fail(err: unknown): void {
    if (this.failure !== undefined) return;
    this.failure = storageError(err);
    this.onError(this.failure);
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
