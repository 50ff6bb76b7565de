// The bounded LSP frame reader: bytes from a server's stdout in, parsed JSON-RPC
// messages out. A frame is `Content-Length: N\r\n[other headers]\r\n\r\n<N bytes>`
// (https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#headerPart).
//
// bounded-reader.ts runs it under vscode-jsonrpc's MessageConnection in place of
// the library's own reader, which buffers chunks until a frame's declared length
// has arrived, with no ceiling: a server
// announcing `Content-Length: 1073741824` makes the daemon hold a gigabyte. This
// reader refuses a length over `maxFrameBytes` as soon as the header is read,
// before anything is allocated for the body, and refuses a header that grows past
// a few KiB (a server printing logs or garbage on stdout) instead of scanning it.

/** A protocol violation by the server: the stream cannot be trusted past it. */
export class FrameError extends Error {
  override name = 'FrameError';
}

/** Longest header block we accept; real servers send one or two short lines. */
const MAX_HEADER_BYTES = 4096;
const CRLFCRLF = Buffer.from('\r\n\r\n');
/** One header line as the base protocol writes it: `Name: value` ending in CRLF. */
const HEADER_LINE = /^[A-Za-z][A-Za-z0-9-]*:[^\r\n]*\r\n$/;

export interface FrameReaderOptions {
  maxFrameBytes: number;
  /** One parsed message and the size of its body in bytes. */
  onMessage: (msg: unknown, bytes: number) => void;
  /** Called once; afterwards the reader ignores input. */
  onError: (err: FrameError) => void;
}

export class FrameReader {
  private readonly opts: FrameReaderOptions;
  private chunks: Buffer[] = [];
  private buffered = 0;
  /** Body length of the frame being read, once its header is parsed. */
  private want: number | undefined;
  private failed = false;

  constructor(opts: FrameReaderOptions) {
    this.opts = opts;
  }

  push(chunk: Buffer): void {
    if (this.failed || chunk.length === 0) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    try {
      this.drain();
    } catch (err) {
      this.fail(err instanceof FrameError ? err : new FrameError(`unreadable frame: ${(err as Error).message}`));
    }
  }

  private drain(): void {
    for (;;) {
      if (this.want === undefined) {
        if (this.buffered === 0) return;
        const head = this.peek(Math.min(this.buffered, MAX_HEADER_BYTES + CRLFCRLF.length));
        const end = head.indexOf(CRLFCRLF);
        if (end < 0) {
          // Fail on the first complete line that is not `Name: value\r`, rather than
          // waiting for 4 KiB of a server's log lines to pile up.
          const nl = head.indexOf(0x0a);
          if (nl >= 0 && !HEADER_LINE.test(head.subarray(0, nl + 1).toString('latin1'))) {
            throw new FrameError('server wrote text that is not an LSP frame');
          }
          if (this.buffered > MAX_HEADER_BYTES) throw new FrameError('server wrote a header longer than 4 KiB or text that is not an LSP frame');
          return;
        }
        this.want = parseHeader(head.subarray(0, end).toString('latin1'), this.opts.maxFrameBytes);
        this.consume(end + CRLFCRLF.length);
      }
      if (this.buffered < this.want) return;
      const body = this.take(this.want);
      this.want = undefined;
      let msg: unknown;
      try {
        msg = JSON.parse(body.toString('utf8'));
      } catch {
        throw new FrameError('server sent a frame whose body is not JSON');
      }
      if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) {
        throw new FrameError('server sent a frame that is not a JSON-RPC message');
      }
      this.opts.onMessage(msg, body.length);
      if (this.failed) return;
    }
  }

  /** The first n buffered bytes without consuming them. */
  private peek(n: number): Buffer {
    if (this.chunks.length === 1 || this.chunks[0]!.length >= n) return this.chunks[0]!.subarray(0, n);
    const merged = Buffer.concat(this.chunks);
    this.chunks = [merged];
    return merged.subarray(0, n);
  }

  private consume(n: number): void {
    this.take(n);
  }

  private take(n: number): Buffer {
    // The common case: the bytes sit in the first chunk (a whole frame per read). A
    // view, no copy: callers decode it at once and keep nothing of it.
    const first = this.chunks[0]!;
    if (first.length >= n) {
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      this.buffered -= n;
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const c = this.chunks[0]!;
      const k = Math.min(c.length, n - filled);
      c.copy(out, filled, 0, k);
      filled += k;
      if (k === c.length) this.chunks.shift();
      else this.chunks[0] = c.subarray(k);
    }
    this.buffered -= n;
    return out;
  }

  private fail(err: FrameError): void {
    if (this.failed) return;
    this.failed = true;
    this.chunks = [];
    this.buffered = 0;
    this.opts.onError(err);
  }
}

/** The body length a header block declares; throws FrameError for anything else. */
export function parseHeader(text: string, maxFrameBytes: number): number {
  // What every server sends: one Content-Length line.
  const only = /^Content-Length: (\d{1,12})$/.exec(text);
  if (only) return checkLength(Number(only[1]), maxFrameBytes);
  let length: number | undefined;
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon <= 0) throw new FrameError('server wrote a malformed header line or text that is not an LSP frame');
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'content-length') {
      if (!/^\d{1,12}$/.test(value)) throw new FrameError('server sent a Content-Length that is not a number');
      length = Number(value);
    } else if (name !== 'content-type') {
      throw new FrameError('server sent an unknown header or text that is not an LSP frame');
    }
  }
  if (length === undefined) throw new FrameError('server sent a frame without Content-Length');
  return checkLength(length, maxFrameBytes);
}

function checkLength(length: number, maxFrameBytes: number): number {
  if (length > maxFrameBytes) {
    throw new FrameError(`server announced a ${length}-byte frame, over the ${maxFrameBytes}-byte limit`);
  }
  return length;
}
