// Writes admitted entries into a fresh staging directory. The main thread only
// encodes: each operation (in tar order) and its bytes are copied as a record
// (write-protocol.ts) into a batch buffer that is moved to a writer thread
// (write-worker.js) when it is full, or at the end of the turn if the thread has
// nothing else, so the tar parser moves on while the thread does the syscalls.
// Batches not yet applied are bounded in bytes: room() makes the parser wait,
// which pauses the request body, so memory does not grow with the upload.
import { errors } from '../errors.js';
import { openLane, takeBuffer, type WriterLane } from './write-pool.js';
import { COPY_ROOM_CODE, Op, strBytes, type WriteReply } from './write-protocol.js';

/** Files up to this size are read whole before they are queued. */
export const SMALL_FILE_BYTES = 64 * 1024;
/** A batch is handed over once it holds this many bytes or records (sooner handed, sooner written). */
const BATCH_BYTES = 256 * 1024;
const BATCH_RECORDS = 128;
/** While this many batches are with the thread, the next keeps filling until it is full or one is answered. */
const IN_FLIGHT = 1;
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
  /** The batch being filled (a view of a pooled buffer), its bytes used and records. */
  private buf: Buffer | undefined;
  private used = 0;
  private records = 0;
  private flushQueued = false;
  private seq = 0;
  /** Bytes of each batch handed over and not yet answered. */
  private readonly unanswered = new Map<number, number>();
  private pendingBytes = 0;
  /** Callers waiting for an answer (room() and close()). */
  private waiters: (() => void)[] = [];
  private failure: unknown;
  private closed = false;
  private lost = false;
  /** Blob ids the thread answered (20 bytes each, in record order: FILE, CLOSE, SYMLINK). */
  private readonly digestChunks: Buffer[] = [];
  /** Disk the thread's LINKIN copies took (EMLINK, EXDEV), and the error a copy past copyRoom() becomes. */
  private copied = 0;
  private copyRefusal: (() => unknown) | undefined;

  /**
   * @param root the empty directory to fill
   * @param fixModes chmod after create: the process umask would strip group/other
   *   bits, and jails run as other uids that must be able to read the tree
   * @param onError told of the first failed write
   * @param base a stored tree that linkIn() links from (an incremental upload)
   */
  constructor(
    private readonly root: string,
    private readonly fixModes: boolean,
    private readonly onError: (err: unknown) => void,
    private readonly base?: string,
  ) {
    this.lane = openLane({ onReply: (r) => this.answered(r), onThreadLost: (err) => this.threadLost(err) });
  }

  dir(path: string): void {
    if (!this.begin(Op.Dir, strBytes(path))) return;
    this.str(path);
    this.end();
  }

  /** Wait until `bytes` more fit; call before reading a small file, or between chunks of a large one. */
  async room(bytes: number): Promise<void> {
    while (this.failure === undefined && this.unanswered.size > 0 && this.pendingBytes + this.used + bytes > MAX_PENDING_BYTES) {
      this.flush();
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  smallFile(path: string, data: Buffer[], size: number, executable: boolean): void {
    if (!this.begin(Op.File, 2 + strBytes(path) + 4 + size)) return;
    this.u16(fileMode(executable));
    this.str(path);
    this.bytes(data, size);
    this.end();
  }

  /** Stream one large file of `size` bytes (its blob id's header needs it first); resolves with its length once every chunk is queued. */
  async largeFile(path: string, chunks: AsyncIterable<Buffer>, executable: boolean, size: number): Promise<number> {
    if (this.begin(Op.Open, 2 + 8 + strBytes(path))) {
      this.u16(fileMode(executable));
      this.used = this.buf!.writeDoubleLE(size, this.used);
      this.str(path);
      this.end();
    }
    let written = 0;
    for await (const chunk of chunks) {
      await this.room(chunk.length);
      if (this.begin(Op.Append, 4 + chunk.length)) {
        this.bytes([chunk], chunk.length);
        this.end();
      }
      written += chunk.length;
    }
    if (this.begin(Op.Close, 0)) this.end();
    return written;
  }

  symlink(path: string, target: string): void {
    this.link(Op.Symlink, path, target);
  }

  /** The target was written earlier in the same ordered stream, so it exists. */
  hardlink(path: string, target: string): void {
    this.link(Op.Link, path, target);
  }

  /** Hard-link the base tree's file or symlink at `path` to the same path here. */
  linkIn(path: string): void {
    if (!this.begin(Op.LinkIn, strBytes(path))) return;
    this.str(path);
    // A link is one syscall and no data: a batch holds eight times as many. At 128
    // a batch, 40,000 links took 300 fresh 320 KiB buffers (the pool holds 40), and
    // allocating them cost as much as the links; in one batch the thread would
    // start only when the last link is queued.
    this.end(1 / 8);
  }

  /**
   * LINKIN records after this may copy at most `bytes` of disk in all (whole
   * `blockBytes` blocks) when a link fails; a copy past it fails the upload with
   * `refusal()`, before it is made. Without it a LINKIN never copies.
   */
  copyRoom(bytes: number, blockBytes: number, refusal: () => unknown): void {
    this.copyRefusal = refusal;
    if (!this.begin(Op.CopyRoom, 8 + 4)) return;
    this.used = this.buf!.writeDoubleLE(bytes, this.used);
    this.used = this.buf!.writeUInt32LE(blockBytes, this.used);
    this.end();
  }

  /** Disk LINKIN copies took so far (final after close()). */
  get copiedBytes(): number {
    return this.copied;
  }

  /** After close(): the blob ids of every file and symlink written, 20 bytes each, in the order they were queued. */
  digests(): Buffer {
    return Buffer.concat(this.digestChunks);
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

  private link(op: typeof Op.Symlink | typeof Op.Link, path: string, target: string): void {
    if (!this.begin(op, strBytes(path) + strBytes(target))) return;
    this.str(path);
    this.str(target);
    this.end();
  }

  /** Start a record of `size` bytes after its op byte, in a batch with room for it; false once closed. */
  private begin(op: number, size: number): boolean {
    // Only a failed upload still parses after close (its last entry, being torn down).
    if (this.closed) return false;
    const need = 1 + size;
    if (this.buf && this.used + need > this.buf.length) this.flush();
    if (!this.buf) {
      this.buf = Buffer.from(takeBuffer(need));
      this.used = 0;
    }
    this.buf[this.used++] = op;
    return true;
  }

  /** `weight`: how much of BATCH_RECORDS this record takes. */
  private end(weight = 1): void {
    this.records += weight;
    if (this.records >= BATCH_RECORDS || this.used >= BATCH_BYTES) this.flush();
    else if (this.unanswered.size < IN_FLIGHT && !this.flushQueued) {
      // Whatever one turn of the parser queued goes over together.
      this.flushQueued = true;
      setImmediate(() => {
        this.flushQueued = false;
        if (!this.closed && this.unanswered.size < IN_FLIGHT) this.flush();
      });
    }
    // Else the thread is busy: keep filling, and answered() hands this batch over
    // when one comes back. A body arrives in 64 KiB turns; a batch per turn cost
    // a hand-over and a fresh buffer per few files and made the main thread the
    // bottleneck (bench/upload).
  }

  private u16(v: number): void {
    this.used = this.buf!.writeUInt16LE(v, this.used);
  }

  private str(s: string): void {
    const len = this.buf!.write(s, this.used + 4, 'utf8');
    this.buf!.writeUInt32LE(len, this.used);
    this.used += 4 + len;
  }

  private bytes(chunks: Buffer[], size: number): void {
    this.used = this.buf!.writeUInt32LE(size, this.used);
    for (const c of chunks) this.used += c.copy(this.buf!, this.used);
  }

  private flush(end = false): void {
    if (this.used === 0 && !end) return;
    const buf = this.buf ?? Buffer.from(takeBuffer(0));
    const seq = this.seq++;
    this.unanswered.set(seq, this.used);
    this.pendingBytes += this.used;
    this.lane.post({
      job: this.lane.job,
      seq,
      ...(seq === 0 ? { start: { root: this.root, fixModes: this.fixModes, ...(this.base !== undefined ? { base: this.base } : {}) } } : {}),
      data: buf.buffer as ArrayBuffer,
      bytes: this.used,
      ...(end ? { end: true } : {}),
    });
    this.buf = undefined;
    this.used = 0;
    this.records = 0;
  }

  private answered(r: WriteReply): void {
    this.pendingBytes -= this.unanswered.get(r.seq) ?? 0;
    this.unanswered.delete(r.seq);
    if (r.digests) this.digestChunks.push(Buffer.from(r.digests));
    if (r.copiedBytes !== undefined) this.copied = Math.max(this.copied, r.copiedBytes);
    if (r.error) this.fail(Object.assign(new Error(r.error.message), { code: r.error.code }));
    else if (!this.closed && this.used > 0 && this.unanswered.size < IN_FLIGHT) this.flush();
    this.wake();
  }

  private threadLost(err: Error): void {
    this.lost = true;
    this.fail(err);
    this.wake();
  }

  private fail(err: unknown): void {
    if (this.failure !== undefined) return;
    const code = (err as NodeJS.ErrnoException)?.code;
    this.failure = code === COPY_ROOM_CODE && this.copyRefusal ? this.copyRefusal() : storageError(err);
    this.onError(this.failure);
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }
}
