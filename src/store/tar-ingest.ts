// Streams one uploaded tar (plain or gzip'd) into an empty directory: the body is
// fed through gunzip and tar-stream's parser with backpressure all the way, so
// memory does not grow with the upload; every header is admitted by EntryChecker
// before a byte of its entry is written; TreeWriter does the writing. Resolves
// only when the whole archive, up to its end-of-archive block, is on disk and
// every symlink was re-checked against the final tree; on any failure it waits
// for every write in flight and rejects, leaving the caller to remove the dir.
// It answers the tree's index (tree-index.ts): every entry, with the git blob id
// the writer thread computed for each file and symlink.
//
// Incremental upload (`base`): the archive is a layer. It is admitted and written
// the same way (whiteouts recorded, never written), then composed with the base's
// index (compose.ts: conflicts refused, the whole new tree admitted again), and
// only then are the base's kept files hard-linked in, by the same writer job, so
// the layer's files exist before any link and nothing is written through one.
//
// The request body is never destroyed here: after a refusal the route still
// answers on the same connection, so ingest only stops reading it.
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { createGunzip, type Gunzip } from 'node:zlib';
import tar from 'tar-stream';
import type { Language } from '../languages.js';
import { errors, isAppError } from '../errors.js';
import { compose, type Composition } from './compose.js';
import { composedCharge } from './disk-charge.js';
import { EntryChecker, type EntryHeader, type EntryLimits } from './entry-check.js';
import { nextTurn, turnCounter } from '../util/event-loop.js';
import { withParents, type FileEntry, type SymlinkEntry, type TreeEntry } from './tree-index.js';
import { SMALL_FILE_BYTES, TreeWriter, storageError } from './tree-writer.js';
import { strBytes } from './write-protocol.js';
import type { MemoryLease } from './upload-memory.js';

/**
 * Heap a decoded tree index takes per byte of its file, with what compose builds
 * over it (a map by path, the kept entries): index records are ~30 bytes beside
 * their path, decoded entries ~120, and the map ~50 more.
 */
const DECODED_INDEX_PER_BYTE = 4;

export interface IngestOptions {
  body: Readable;
  gzip: boolean;
  /** An empty directory, created by the caller. */
  dir: string;
  limits: EntryLimits;
  /** chmod after create (the umask strips bits the jails need). */
  fixModes: boolean;
  signal?: AbortSignal;
  /** A body that brings no byte for this long while we wait for it is cut (LSPD_UPLOAD_READ_TIMEOUT_MS). */
  readTimeoutMs: number;
  /** Told of every body chunk (compressed bytes, as received). */
  onBodyBytes: (n: number) => void;
  /**
   * The archive is a layer over this stored tree: its host dir, and how to read its
   * index. The index is read only once the layer has arrived, so an upload that
   * stalls holds none of it (issue 30: six stalled uploads held 282 MiB of decoded
   * indexes before their bodies came).
   */
  base?: { treeDir: string; indexBytes: () => Promise<number>; entries: () => Promise<readonly TreeEntry[]> };
  /** Charged what the upload holds as it grows (upload-memory.ts); throws busy past the org's share. */
  memory: MemoryLease;
}

export interface IngestResult {
  files: number;
  bytes: number;
  languages: Language[];
  /** Steps spent resolving symlinks (bounded by the tar's header bytes: EntryChecker), a composed tree's walk included. */
  resolveSteps: number;
  /** Every entry of the stored tree, directories included, with blob ids. */
  entries: TreeEntry[];
  /** File bytes this upload wrote: the whole tree's, or an incremental layer's. */
  storedBytes: number;
  /** Incremental: the paths the layer added, replaced or removed. */
  changed?: string[];
  /** Disk the root takes holding every file itself (disk-charge.ts): its charge once no base shares its files. */
  diskBytes: number;
  /** Disk it takes beside its base (its own metadata, its layer's data, what composing copied): its charge while the base is stored. */
  ownDiskBytes: number;
}

/** tar-stream's header also says where the entry's data starts in the tar. */
type Header = EntryHeader & { byteOffset?: number };
/** One entry's data (a streamx Readable). */
interface EntryStream extends AsyncIterable<Buffer> {
  on(ev: 'data', fn: (c: Buffer) => void): unknown;
  on(ev: 'end' | 'close', fn: () => void): unknown;
  on(ev: 'error', fn: (err: Error) => void): unknown;
  resume(): unknown;
}
type Extract = ReturnType<typeof tar.extract>;

/** A source we can pause, and a sink that says when it wants more. */
interface Source {
  on(ev: 'data', fn: (c: Buffer) => void): unknown;
  off(ev: 'data', fn: (c: Buffer) => void): unknown;
  pause(): unknown;
  resume(): unknown;
}
interface Sink {
  write(c: Buffer): boolean;
  once(ev: 'drain', fn: () => void): unknown;
  off(ev: 'drain', fn: () => void): unknown;
}

export function ingestTar(opts: IngestOptions): Promise<IngestResult> {
  return new Ingest(opts).run();
}

class Ingest {
  private readonly checker: EntryChecker;
  private readonly writer: TreeWriter;
  private readonly extract: Extract = tar.extract();
  private readonly gunzip: Gunzip | undefined;
  private failure: unknown;
  private failed!: (err: unknown) => void;
  private readonly detachers: (() => void)[] = [];
  /** Bytes of tar fed to the parser, and where the last entry's data ended. */
  private fed = 0;
  private lastEntryEnd = 0;
  private readonly maxTarBytes: number;
  /** When the body last brought bytes or we last stopped holding it back; a stalled upload holds a root's lock, an upload slot and a staging dir. */
  private lastProgressMs = Date.now();
  /** Streams of the body's path paused because the next one is full: the body waits for us, not we for it. */
  private heldBack = 0;
  /** What the archive wrote, in order; the file and symlink entries awaiting their blob ids, in record order. */
  private readonly written: TreeEntry[] = [];
  private readonly awaitingIds: (FileEntry | SymlinkEntry)[] = [];
  private readonly hardlinks: { entry: FileEntry; target: string }[] = [];
  private readonly whiteouts: string[] = [];
  /** What the base's decoded index is charged (upload-memory.ts), once it is read. */
  private baseCharge = 0;
  private readonly opaques: string[] = [];

  constructor(private readonly opts: IngestOptions) {
    this.checker = new EntryChecker(opts.limits, { whiteouts: opts.base !== undefined });
    this.writer = new TreeWriter(opts.dir, opts.fixModes, (err) => this.fail(err), opts.base?.treeDir);
    // Larger zlib chunks mean fewer trips through the parser.
    this.gunzip = opts.gzip ? createGunzip({ chunkSize: 64 * 1024 }) : undefined;
    // Headers and padding are bounded by the entry limit; past this the "tar" is
    // padding (a gzip of zeros, say), never a tree: stop decompressing it. An org
    // with less room than a tree may hold can never store more than its room.
    const { maxTreeBytes, maxTreeFiles, room } = opts.limits;
    this.maxTarBytes = Math.min(maxTreeBytes, room?.bytes ?? maxTreeBytes) + maxTreeFiles * 2048 + 64 * 1024 * 1024;
  }

  async run(): Promise<IngestResult> {
    const failed = new Promise<never>((_, reject) => (this.failed = reject));
    failed.catch(() => {});
    try {
      const parsed = this.parse();
      parsed.catch(() => {}); // a failure is reported through `failed` first
      await Promise.race([parsed, failed]);
      const base = this.opts.base;
      let composition: (Composition & { disk: { own: number; whole: number } }) | undefined;
      if (base) {
        this.baseCharge = DECODED_INDEX_PER_BYTE * (await base.indexBytes());
        this.charge();
        composition = await this.compose(await base.entries());
      }
      await this.writer.close();
      await this.checker.verifySymlinksYielding();
      if (this.failure !== undefined) throw this.failure;
      await this.fillIds();
      if (composition) {
        const { files, bytes, languages, entries, changed, disk } = composition;
        const resolveSteps = this.checker.resolveSteps + composition.resolveSteps;
        const own = disk.own + this.writer.copiedBytes;
        return { files, bytes, languages, resolveSteps, entries, storedBytes: this.checker.bytes, changed, diskBytes: disk.whole, ownDiskBytes: own };
      }
    } catch (err) {
      this.fail(err);
      // What it held is garbage now: another upload of the org may take it at once,
      // not after the writes in flight and the staging dir's removal.
      this.opts.memory.release();
      // Nothing may still be writing when the caller removes the directory.
      await this.writer.close().catch(() => {});
      throw this.failure;
    } finally {
      for (const detach of this.detachers) detach();
    }
    return {
      files: this.checker.files,
      bytes: this.checker.bytes,
      languages: [...this.checker.languages].sort(),
      resolveSteps: this.checker.resolveSteps,
      entries: await withParents(this.written),
      storedBytes: this.checker.bytes,
      diskBytes: this.checker.disk.bytes,
      ownDiskBytes: this.checker.disk.bytes,
    };
  }

  /**
   * Compose the parsed layer with the base (throws what it refuses), check the
   * composed root's disk against the org's room before anything is linked, then
   * queue the base's kept entries, with what is left of the room for copies.
   */
  private async compose(base: readonly TreeEntry[]): Promise<Composition & { disk: { own: number; whole: number } }> {
    if (this.failure !== undefined) throw this.failure;
    const c = await compose(base, { entries: this.written, whiteouts: this.whiteouts, opaques: this.opaques }, this.opts.limits);
    const block = this.checker.disk.blockBytes;
    // Every directory and name of the new tree is its own, not only the layer's.
    const disk = await composedCharge(c.entries, c.fromBase, this.checker.disk.dataBytes, block);
    const room = this.opts.limits.room;
    // A base on another filesystem shares nothing: every kept file will be copied (EXDEV), so it is charged whole, up front.
    const [from, to] = await Promise.all([stat(this.opts.base!.treeDir), stat(this.opts.dir)]);
    const copies = from.dev !== to.dev ? disk.whole - disk.own : 0;
    if (room && disk.own + copies > room.bytes) throw errors.insufficientStorage(room.why, { limit: 'org_disk_quota' });
    const copyWhy =
      'Composing on the base had to copy files the filesystem would not link again (ext4 allows 65,000 links to one file), and the copies do not fit' +
      (room ? `: ${room.why}` : '.');
    this.writer.copyRoom(room ? room.bytes - disk.own : Infinity, block, () => errors.insufficientStorage(copyWhy, room ? { limit: 'org_disk_quota' } : {}));
    // Records of 40,000 links are queued in one go; asking for room per record (an
    // await each) cost more than the links themselves, so it is asked per slice.
    // room() returns at once while there is room: the turns are handed back apart.
    const SLICE = 1024;
    const due = turnCounter();
    for (let i = 0; i < c.fromBase.length; i += SLICE) {
      const slice = c.fromBase.slice(i, i + SLICE);
      await this.writer.room(slice.reduce((n, e) => n + 1 + strBytes(e.path), 0));
      if (this.failure !== undefined) throw this.failure;
      for (const e of slice) {
        if (e.kind === 'dir') this.writer.dir(e.path);
        else this.writer.linkIn(e.path);
        // A record costs about what 64 bytes of name do: 4,096 of them were 13 ms of CPU at load 7 (bench/shape-stall).
        if (due(e.path.length + 64)) await nextTurn();
      }
    }
    return { ...c, disk };
  }

  /** Charge the memory lease what is held now: every admitted header's names (their picture, trie and index entries) and the base's index. */
  private charge(): void {
    this.opts.memory.need(this.checker.headerBytes + this.baseCharge);
  }

  /** Give each written file and symlink the blob id the writer thread computed; hard links their target's. */
  private async fillIds(): Promise<void> {
    const ids = this.writer.digests();
    if (ids.length !== this.awaitingIds.length * 20) {
      throw new Error(`the writer thread answered ${ids.length / 20} blob ids for ${this.awaitingIds.length} files`);
    }
    const due = turnCounter();
    for (const [i, e] of this.awaitingIds.entries()) {
      e.id = ids.toString('hex', i * 20, i * 20 + 20);
      if (due()) await nextTurn();
    }
    if (this.hardlinks.length === 0) return;
    const files = new Map<string, FileEntry>();
    for (const e of this.written) {
      if (e.kind === 'file' || e.kind === 'exec') files.set(e.path, e);
      if (due(e.path.length)) await nextTurn();
    }
    for (const { entry, target } of this.hardlinks) {
      const t = files.get(target)!;
      Object.assign(entry, { kind: t.kind, size: t.size, id: t.id });
      if (due()) await nextTurn();
    }
  }

  /** Wire body → (gunzip →) parser; resolves once the parser has consumed the last entry. */
  private parse(): Promise<void> {
    const { body, signal } = this.opts;
    const ex = this.extract;
    ex.on('entry', (header, stream, next) => {
      // When the upload fails, tar-stream destroys the current entry's stream with
      // the error; unheard, that error would be thrown as uncaught. The failure is
      // already handled through fail().
      stream.on('error', () => {});
      // streamx types chunks as unknown; tar-stream yields Buffers.
      this.entry(header as Header, stream as unknown as EntryStream).then(
        () => next(),
        (err: unknown) => this.fail(err),
      );
    });
    const done = new Promise<void>((resolve, reject) => {
      ex.on('finish', resolve);
      ex.on('error', (err: unknown) => reject(this.failure ?? classify(err, this.opts.gzip)));
    });

    let ended = false;
    const onEnd = () => {
      ended = true;
      if (this.gunzip) this.gunzip.end();
      else ex.end(undefined);
    };
    // The client hung up, or the daemon is stopping: either way the tree is incomplete.
    const onGone = () => {
      if (!ended) this.fail(errors.uploadAborted());
    };
    const onAbort = () => this.fail(errors.uploadAborted());
    body.on('end', onEnd);
    body.on('error', onGone);
    body.on('close', onGone);
    signal?.addEventListener('abort', onAbort);
    this.detachers.push(() => {
      body.off('end', onEnd);
      body.off('error', onGone);
      body.off('close', onGone);
      signal?.removeEventListener('abort', onAbort);
    });
    if (signal?.aborted) onAbort();
    // A client that hung up while this upload waited for its turn is already gone.
    if (body.destroyed && !body.readableEnded) onGone();

    // Nothing else bounds an upload in time (uploads are long, so the server has no
    // request timeout): a client that stops sending must not hold the lock, an upload
    // slot and a staging dir for ever. Only time spent waiting for the body counts:
    // while our side holds it back (a slow disk, a large file) the clock stands still.
    const readTimeoutMs = this.opts.readTimeoutMs;
    const stallTimer = setInterval(
      () => {
        const now = Date.now();
        if (ended || this.heldBack > 0) this.lastProgressMs = now;
        else if (now - this.lastProgressMs >= readTimeoutMs) {
          this.fail(errors.uploadAborted(`The upload stalled: no data arrived for ${readTimeoutMs} ms; nothing was stored.`));
        }
      },
      Math.max(25, Math.min(readTimeoutMs / 4, 10_000)),
    );
    stallTimer.unref();
    this.detachers.push(() => clearInterval(stallTimer));

    const countBody = (c: Buffer) => {
      this.lastProgressMs = Date.now();
      this.opts.onBodyBytes(c.length);
    };
    const countTar = (c: Buffer) => {
      this.fed += c.length;
      if (this.fed > this.maxTarBytes) this.fail(errors.tooLarge('The archive is larger than any tree within the limits.', 'tree_bytes'));
    };
    if (this.gunzip) {
      const gz = this.gunzip;
      gz.on('error', (err: Error) => this.fail(errors.badArchive(`The gzip stream is corrupt or truncated (${err.message}).`)));
      gz.on('end', () => ex.end(undefined));
      this.forward(body, gz, countBody);
      this.forward(gz, ex, countTar);
    } else {
      this.forward(body, ex, (c) => (countBody(c), countTar(c)));
    }
    return done.then(() => this.checkEnd());
  }

  /** Like pipe(), but never destroys the source and stops on detach. */
  private forward(src: Source, dst: Sink, onChunk: (c: Buffer) => void): void {
    let waiting = false;
    const resume = () => {
      waiting = false;
      this.heldBack--;
      this.lastProgressMs = Date.now();
      if (this.failure === undefined) src.resume();
    };
    const onData = (c: Buffer) => {
      if (this.failure !== undefined) return;
      onChunk(c);
      if (this.failure !== undefined) return;
      if (!dst.write(c) && !waiting) {
        waiting = true;
        this.heldBack++;
        src.pause();
        dst.once('drain', resume);
      }
    };
    src.on('data', onData);
    this.detachers.push(() => {
      src.off('data', onData);
      dst.off('drain', resume);
      if (waiting) this.heldBack--;
      waiting = false;
      src.pause();
    });
  }

  private async entry(h: Header, stream: EntryStream): Promise<void> {
    this.lastProgressMs = Date.now(); // our side moving counts too: the body may be paused for us
    const size = h.size ?? 0;
    this.lastEntryEnd = (h.byteOffset ?? 0) + Math.ceil(size / 512) * 512;
    const a = this.checker.admit(h);
    this.charge();
    switch (a.kind) {
      // tar-stream never feeds a directory's stream (it has no data): do not wait on it.
      case 'skip':
        stream.resume();
        return;
      case 'whiteout':
        this.whiteouts.push(a.path);
        return drain(stream);
      case 'opaque':
        this.opaques.push(a.dir);
        return drain(stream);
      case 'dir':
        this.written.push({ path: a.path, kind: 'dir' });
        this.writer.dir(a.path);
        stream.resume();
        return;
      case 'symlink': {
        const e = { path: a.path, kind: 'symlink' as const, target: a.target, id: '' };
        this.written.push(e);
        this.awaitingIds.push(e);
        this.writer.symlink(a.path, a.target);
        return drain(stream);
      }
      case 'hardlink': {
        const e: FileEntry = { path: a.path, kind: 'file', size: 0, id: '' };
        this.written.push(e);
        this.hardlinks.push({ entry: e, target: a.target });
        this.writer.hardlink(a.path, a.target);
        return drain(stream);
      }
      case 'file': {
        const e: FileEntry = { path: a.path, kind: a.executable ? 'exec' : 'file', size: a.size, id: '' };
        this.written.push(e);
        this.awaitingIds.push(e);
        if (a.size <= SMALL_FILE_BYTES) {
          await this.writer.room(a.size);
          const { chunks, size } = await readAll(stream);
          assertSize(size, a.size, h.name);
          this.writer.smallFile(a.path, chunks, size, a.executable);
          return;
        }
        const n = await this.writer.largeFile(a.path, stream, a.executable, a.size);
        assertSize(n, a.size, h.name);
        return;
      }
    }
  }

  /**
   * tar-stream accepts input that stops cleanly after an entry; a real archive ends
   * with zero blocks. Without one, the upload was cut short: refuse it.
   */
  private checkEnd(): void {
    if (this.fed === 0) throw errors.badArchive('The body is empty; expected a tar archive.');
    if (this.fed < this.lastEntryEnd + 512) throw errors.badArchive('The tar archive is truncated (no end-of-archive block).');
  }

  private fail(err: unknown): void {
    if (this.failure !== undefined) return;
    // The parser's errors also reach us through an entry's stream; classify them the same way.
    this.failure = classify(err, this.opts.gzip);
    for (const detach of this.detachers.splice(0)) detach();
    this.gunzip?.destroy();
    this.extract.destroy(this.failure as Error);
    this.failed(this.failure);
  }
}

/** An entry's whole data (small files only). Events, not for-await: measurably cheaper per entry. */
function readAll(stream: EntryStream): Promise<{ chunks: Buffer[]; size: number }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let ended = false;
    stream.on('data', (c: Buffer) => {
      chunks.push(c);
      size += c.length;
    });
    stream.on('end', () => {
      ended = true;
      resolve({ chunks, size });
    });
    stream.on('error', reject);
    stream.on('close', () => ended || reject(new Error('entry stream closed early')));
  });
}

function drain(stream: EntryStream): Promise<void> {
  return new Promise((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('close', resolve); // destroyed because the upload failed elsewhere
    stream.on('error', reject);
    stream.resume();
  });
}

function assertSize(got: number, want: number, name: string): void {
  if (got !== want) throw errors.badArchive(`Entry ${JSON.stringify(name)} is shorter than its header says.`);
}

// Every error tar-stream raises (extract.js, headers.js): the archive's fault, a 400.
const TAR_ERRORS = /^(Invalid tar header|Invalid header|Unexpected end of data|Header exceeds max size)/;

/** An AppError as it is; tar-stream's errors as bad_archive; a full disk as 507; anything else unchanged (a 500). */
function classify(err: unknown, gzip: boolean): unknown {
  if (isAppError(err)) return err;
  const msg = (err as Error)?.message ?? '';
  if (!TAR_ERRORS.test(msg)) return storageError(err);
  if (msg.startsWith('Unexpected end of data')) return errors.badArchive('The tar archive is truncated.');
  const hint = gzip ? '' : " (a gzip'd tar needs Content-Type: application/gzip or Content-Encoding: gzip)";
  return errors.badArchive(`The body is not a valid tar archive${hint}.`);
}
