// vscode-jsonrpc's MessageReader over a server's stdout, with our bounds: frames
// come from FrameReader (a Content-Length over the ceiling is refused from the
// header, before anything is allocated for the body; garbage and malformed headers
// are a protocol violation), and the library's inbound queue is kept short.
//
// Why the queue needs a bound: MessageConnection queues every message it is given
// and handles one per event-loop turn, so a server that floods while nothing waits
// on it (no budget to charge) would grow that queue faster than it drains. Once
// more than a few hundred messages (or a MiB) are queued, the reader stops reading
// until the queue is empty: the server blocks on its own stdout instead of making
// us hold its output. `taken` is how the connection tells the reader a message left
// the queue (its MessageStrategy calls it). "Empty" is not a count reaching zero:
// the library keys its queue by id, so a server repeating an id leaves fewer
// messages queued than were given, and a count would never drain. It is a whole
// turn of the event loop in which nothing was taken, since a non-empty queue has
// one message taken every turn.
import type { Readable } from 'node:stream';
import { AbstractMessageReader, type DataCallback, type Disposable, type Message } from 'vscode-jsonrpc/node';
import { FrameReader } from './frame-reader.js';

/** Past these, reading pauses until the connection has handled what it was given. */
export const MAX_QUEUED_MESSAGES = 512;
const MAX_QUEUED_BYTES = 1024 * 1024;

export interface BoundedReaderOptions {
  maxFrameBytes: number;
  /**
   * Sees every message and its body size before the connection does (where the
   * per-request budgets are charged); returning false drops the message.
   */
  inspect: (msg: Message, bytes: number) => boolean;
}

/** Broken input surfaces as `onError` (a FrameError for a protocol violation), its end as `onClose`. */
export class BoundedMessageReader extends AbstractMessageReader {
  private readonly input: Readable;
  private readonly opts: BoundedReaderOptions;
  private readonly frames: FrameReader;
  private callback: DataCallback | undefined;
  /** Messages handed to the connection and not yet taken off its queue, with their sizes (an estimate: see above). */
  private queued = new WeakMap<object, number>();
  private queuedMessages = 0;
  private queuedBytes = 0;
  private takenThisTurn = 0;
  private paused = false;
  private stopped = false;
  /** The most messages ever queued at once (tests read it to check the bound). */
  highWaterMessages = 0;

  private readonly onData = (chunk: Buffer) => {
    this.frames.push(chunk);
    if (!this.stopped && !this.paused && (this.queuedMessages > MAX_QUEUED_MESSAGES || this.queuedBytes > MAX_QUEUED_BYTES)) {
      this.paused = true;
      this.input.pause();
      this.takenThisTurn = 0;
      setImmediate(this.resumeWhenDrained);
    }
  };
  /** Once per turn while paused: read on after a turn in which the library took nothing. */
  private readonly resumeWhenDrained = () => {
    if (this.stopped) return;
    if (this.takenThisTurn > 0) {
      this.takenThisTurn = 0;
      setImmediate(this.resumeWhenDrained);
      return;
    }
    this.queued = new WeakMap();
    this.queuedMessages = 0;
    this.queuedBytes = 0;
    this.paused = false;
    this.input.resume();
  };
  private readonly onEnd = () => {
    this.stop();
    this.fireClose();
  };
  private readonly onInputError = (err: Error) => {
    this.stop();
    this.fireError(new Error(`server output failed: ${err.message}`));
    this.fireClose();
  };

  constructor(input: Readable, opts: BoundedReaderOptions) {
    super();
    this.input = input;
    this.opts = opts;
    this.frames = new FrameReader({
      maxFrameBytes: opts.maxFrameBytes,
      onMessage: (msg, bytes) => this.deliver(msg as Message, bytes),
      onError: (err) => {
        this.stop();
        this.fireError(err);
      },
    });
  }

  listen(callback: DataCallback): Disposable {
    this.callback = callback;
    this.input.on('data', this.onData);
    this.input.on('end', this.onEnd);
    this.input.on('error', this.onInputError);
    return { dispose: () => this.stop() };
  }

  /** The connection took `msg` off its queue. */
  taken(msg: Message): void {
    this.takenThisTurn++;
    const bytes = this.queued.get(msg);
    if (bytes === undefined) return;
    this.queued.delete(msg);
    this.queuedMessages--;
    this.queuedBytes -= bytes;
  }

  override dispose(): void {
    this.stop();
    super.dispose();
  }

  private deliver(msg: Message, bytes: number): void {
    if (this.stopped || !this.callback) return;
    if (!this.opts.inspect(msg, bytes)) return;
    if (this.stopped) return; // inspecting it closed the connection
    // A server cancelling one of its requests to us: we answer those synchronously,
    // so there is never anything left to cancel; and the library would read
    // `params.id` of whatever the server sent.
    if ((msg as { method?: unknown }).method === '$/cancelRequest') return;
    this.queued.set(msg, bytes);
    this.queuedMessages++;
    this.queuedBytes += bytes;
    if (this.queuedMessages > this.highWaterMessages) this.highWaterMessages = this.queuedMessages;
    this.callback(msg);
  }

  /** Stop reading for good; what the server still writes is drained and dropped, so it never blocks on a full pipe. */
  private stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.input.off('data', this.onData);
    this.input.off('end', this.onEnd);
    this.input.off('error', this.onInputError);
    this.input.on('error', () => {});
    this.input.resume();
  }
}
