// @ts-check
// The Go modules' hashing thread (go-modules.ts): the "h1:" hash go.sum gives a
// module zip, computed the way Go's dirhash.HashZip does, and the sha256 of each
// zip's bytes. Megabytes of inflate and sha256 per module: off the loop, one thread
// per batch. Plain JavaScript for the reason store/write-worker.js gives.
//
// Hash1 (golang.org/x/mod/sumdb/dirhash): sha256 over the lines
// "<sha256 hex of the file>  <name>\n" of every file of the zip, names sorted
// bytewise, base64, "h1:" prefix. Names are the central directory's raw bytes, as
// Go's archive/zip reads them (yauzl decodeStrings: false; its CP437 decoding would
// change them). A zip Go would read differently is never given an answer: a name
// twice (Go's map keeps the last), a name with a newline (dirhash refuses it), a
// method yauzl cannot inflate, sizes that lie, more than Go's 500 MiB unpacked
// (modzip.MaxZipFile: a zip bomb a jail left is never inflated past it). No answer:
// the zip is not stored.
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { Readable } from 'node:stream';
import { parentPort, workerData } from 'node:worker_threads';
import yauzl from 'yauzl';

if (!parentPort) throw new Error('go-zip-worker.js runs as a worker thread');
const port = parentPort;
const job = /** @type {{ paths: string[] }} */ (workerData);

const buf = Buffer.allocUnsafe(256 * 1024);
const MAX_UNPACKED = 500 << 20;
/** @param {number} fd */
function sha256Fd(fd) {
  const h = createHash('sha256');
  let pos = 0;
  for (;;) {
    const n = readSync(fd, buf, 0, buf.length, pos);
    if (n === 0) break;
    pos += n;
    h.update(buf.subarray(0, n));
  }
  return h.digest('hex');
}

/**
 * The zip's bytes through an fd this thread owns and closes: yauzl's own fd reader
 * closes the fd with the zip and never when it fails to open one, and an fs stream
 * closes its fd when destroyed, which yauzl does. Reads are synchronous (a thread).
 */
class FdReader extends yauzl.RandomAccessReader {
  /** @param {number} fd */
  constructor(fd) {
    super();
    this.fd = fd;
  }
  /**
   * @override
   * @param {number} start
   * @param {number} end  exclusive
   */
  _readStreamForRange(start, end) {
    const fd = this.fd;
    let pos = start;
    return new Readable({
      read() {
        const n = Math.min(buf.length, end - pos);
        const got = n > 0 ? readSync(fd, buf, 0, n, pos) : 0;
        pos += got;
        this.push(got > 0 ? Buffer.from(buf.subarray(0, got)) : null);
      },
    });
  }
}

/**
 * @param {number} fd
 * @returns {Promise<string | undefined>} the h1 hash's sha256, hex (not base64: a store name)
 */
async function hash1(fd) {
  const opts = { lazyEntries: true, decodeStrings: false, validateEntrySizes: true, autoClose: false };
  const zip = await yauzl.fromRandomAccessReaderPromise(new FdReader(fd), fstatSync(fd).size, opts);
  try {
    /** @type {{ name: Buffer; hex: string }[]} */
    const files = [];
    const seen = new Set();
    let unpacked = 0;
    for await (const entry of zip.eachEntry()) {
      unpacked += entry.uncompressedSize; // yauzl's validateEntrySizes holds each entry to its own
      if (unpacked > MAX_UNPACKED) return undefined;
      const name = /** @type {Buffer} */ (/** @type {unknown} */ (entry.fileName));
      const key = name.toString('latin1');
      if (seen.has(key) || name.includes(0x0a)) return undefined;
      seen.add(key);
      const h = createHash('sha256');
      const stream = await zip.openReadStreamPromise(entry);
      for await (const chunk of stream) h.update(/** @type {Buffer} */ (chunk));
      files.push({ name, hex: h.digest('hex') });
    }
    files.sort((a, b) => Buffer.compare(a.name, b.name));
    const sum = createHash('sha256');
    for (const f of files) sum.update(Buffer.concat([Buffer.from(`${f.hex}  `), f.name, Buffer.from('\n')]));
    return sum.digest('hex');
  } finally {
    zip.close();
  }
}

/** For each path: [sha256 hex of its bytes, h1 hex or null (no answer)], or null when it could not be read. */
const out = [];
for (const path of job.paths) {
  let fd;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    out.push(null);
    continue;
  }
  try {
    const sha = sha256Fd(fd);
    const h1 = await hash1(fd).catch(() => undefined);
    out.push([sha, h1 ?? null]);
  } catch {
    out.push(null);
  } finally {
    closeSync(fd);
  }
}
port.postMessage(out);
