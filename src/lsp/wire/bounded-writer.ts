// vscode-jsonrpc's MessageWriter over a server's stdin, with our bound: a server
// that stops reading its input must not make us queue writes without end.
//
// The library's own StreamMessageWriter waits for each write's callback before the
// next, behind a semaphore: against a server that stopped reading, every later
// message waits in that semaphore's queue, unbounded, and no write ever fails. Here
// a write is handed to the pipe at once as one frame (header and body in one
// buffer) and resolves; once more than `maxQueuedWriteBytes` sit unread in the pipe's
// buffer the writer reports the server wedged (onError) and drops everything after,
// and the session kills the server, which is what releases the pipe. Writes to a
// pipe that is already closed are dropped: the exit path reports that server.
import type { Writable } from 'node:stream';
import { AbstractMessageWriter, type Message, type MessageWriter } from 'vscode-jsonrpc/node';

export interface BoundedWriterOptions {
  /** Bytes we let queue on the server's stdin before calling it wedged. */
  maxQueuedWriteBytes: number;
  /** Sees every message as it is written, dropped or not (the connection learns its request ids here). */
  onWrite: (msg: Message) => void;
}

/** The server stopped reading its input: it is wedged. */
export class WriteBlockedError extends Error {
  override name = 'WriteBlockedError';
}

export class BoundedMessageWriter extends AbstractMessageWriter implements MessageWriter {
  private readonly output: Writable;
  private readonly opts: BoundedWriterOptions;
  private blocked = false;
  private count = 0;

  constructor(output: Writable, opts: BoundedWriterOptions) {
    super();
    this.output = output;
    this.opts = opts;
    // EPIPE when the server is gone: reported, never thrown at the daemon.
    output.on('error', (err) => this.fireError(new Error(`server input failed: ${err.message}`)));
  }

  write(msg: Message): Promise<void> {
    this.opts.onWrite(msg);
    const out = this.output;
    if (this.blocked || out.destroyed || out.writableEnded) return Promise.resolve();
    const body = Buffer.from(JSON.stringify(msg), 'utf8');
    out.write(Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'latin1'), body]));
    this.count++;
    if (out.writableLength > this.opts.maxQueuedWriteBytes) {
      this.blocked = true;
      this.fireError(new WriteBlockedError(`the server stopped reading its input (${out.writableLength} bytes queued)`), msg, this.count);
    }
    return Promise.resolve();
  }

  /** Nothing to flush: every write went to the pipe when it was made. */
  end(): void {}
}
