// A bounded JSON-RPC 2.0 client over a language server's stdio, built on
// vscode-jsonrpc's MessageConnection: the library does ids, dispatch of server
// requests and notifications, `$/cancelRequest` from a CancellationToken and its
// ResponseError; the bounds are ours, in the reader and writer it is given
// (bounded-reader.ts: frame ceiling checked from the header, a short inbound queue;
// bounded-writer.ts: a server that stops reading cannot make us queue writes) and
// in the budgets charged here as messages are read.
//
// Budgets: every waiter (a request, or a session waiting for readiness or
// diagnostics) holds a Budget. A response charges its own request in full; every
// other inbound message is shared out among the holders at that moment, so a
// notification flood fails the waiters quickly while 50 concurrent requests on one
// session do not starve each other on the progress chatter they cause together.
//
// No CancellationToken per request (a token source and its emitter on every query):
// an abort sends `$/cancelRequest` for the id we read off the wire as the library
// wrote the request, which is what the library's token would have sent.
//
// `shutdown` goes without params: `sendRequest(method)` puts no params member on
// the wire, where `sendRequest(method, null)` would put `params: [null]`, which
// TypeScript 7 rejects
// (https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#shutdown).
import type { Readable, Writable } from 'node:stream';
import { createMessageConnection, ErrorCodes as RpcErrorCodes, Message, ResponseError, type Logger, type MessageConnection } from 'vscode-jsonrpc/node';
import { BoundedMessageReader } from './bounded-reader.js';
import { BoundedMessageWriter } from './bounded-writer.js';
import { FrameError } from './frame-reader.js';

/** An error response from the server (a well-formed JSON-RPC error): the library's own class. */
export { ResponseError };

export type JsonRpcId = number | string;

/** The connection is gone (server exited, protocol violation, or closed by us). */
export class ConnectionClosedError extends Error {
  override name = 'ConnectionClosedError';
}

/** A waiter saw more server output than one request may cost. */
export class BudgetExceededError extends Error {
  override name = 'BudgetExceededError';
}

/** LSP error codes we send or look for (spec "ErrorCodes"). */
export const ErrorCodes = { MethodNotFound: -32601, RequestCancelled: -32800, ContentModified: -32801 } as const;

export class Budget {
  private messages = 0;
  private bytes = 0;
  private tripped: BudgetExceededError | undefined;
  private readonly listeners = new Set<(err: BudgetExceededError) => void>();

  constructor(
    readonly maxMessages: number,
    readonly maxBytes: number,
  ) {}

  /** Charge a share of one message; trips once when a limit is passed. */
  charge(messages: number, bytes: number): void {
    if (this.tripped) return;
    this.messages += messages;
    this.bytes += bytes;
    if (this.messages > this.maxMessages || this.bytes > this.maxBytes) {
      const what = this.messages > this.maxMessages ? `${this.maxMessages} messages` : `${this.maxBytes} bytes`;
      this.tripped = new BudgetExceededError(`the server sent more than ${what} while one request waited`);
      for (const l of this.listeners) l(this.tripped);
    }
  }

  get exceeded(): BudgetExceededError | undefined {
    return this.tripped;
  }

  onExceeded(fn: (err: BudgetExceededError) => void): () => void {
    if (this.tripped) {
      fn(this.tripped);
      return () => {};
    }
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}

export interface RequestOptions {
  signal?: AbortSignal;
  budget?: Budget;
  /** After a cancel, how long the server has to answer before `onUnanswered` fires. */
  cancelGraceMs?: number;
  /** The server never answered a cancelled request: it has stopped working. */
  onUnanswered?: () => void;
}

type ServerRequestHandler = (method: string, params: unknown) => unknown;
type NotificationHandler = (method: string, params: unknown) => void;

/** A request we wait on: its id (learnt as the library writes it) and its budget. */
interface Pending {
  id: JsonRpcId | undefined;
  budget: Budget | undefined;
  reject: (e: Error) => void;
  cleanup: () => void;
}

export interface ConnectionOptions {
  input: Readable;
  output: Writable;
  maxFrameBytes: number;
  /** Bytes we let queue on the server's stdin before calling it wedged. */
  maxQueuedWriteBytes?: number;
  onNotification?: NotificationHandler;
  onRequest?: ServerRequestHandler;
  /** Called once when the connection closes, with the reason if it was not us. */
  onClose?: (err: Error | undefined) => void;
  /** What vscode-jsonrpc itself reports (a malformed message it dropped, …); one line, cut short. */
  log?: (message: string) => void;
}

export class LspConnection {
  private readonly opts: ConnectionOptions;
  private readonly reader: BoundedMessageReader;
  private readonly conn: MessageConnection;
  private readonly pending = new Set<Pending>();
  private readonly byId = new Map<JsonRpcId, Pending>();
  /** The request being handed to the library right now: its id is read off the wire as it is written. */
  private sending: Pending | undefined;
  /** Timers that give up on the answer to a cancelled request. */
  private readonly watches = new Set<NodeJS.Timeout>();
  private readonly holders = new Set<Budget>();
  private closedWith: Error | undefined;
  private isClosed = false;

  constructor(opts: ConnectionOptions) {
    this.opts = opts;
    this.reader = new BoundedMessageReader(opts.input, { maxFrameBytes: opts.maxFrameBytes, inspect: (msg, bytes) => this.inspect(msg, bytes) });
    const writer = new BoundedMessageWriter(opts.output, {
      maxQueuedWriteBytes: opts.maxQueuedWriteBytes ?? 8 * 1024 * 1024,
      onWrite: (msg) => {
        if (this.sending && Message.isRequest(msg) && msg.id !== null) {
          this.sending.id = msg.id;
          this.byId.set(msg.id, this.sending);
        }
      },
    });
    this.reader.onError((err) => this.close(err));
    this.reader.onClose(() => this.close(new ConnectionClosedError('the server closed its output')));
    writer.onError(([err]) => this.close(err));
    this.conn = createMessageConnection(this.reader, writer, libraryLogger(opts.log), {
      // Every message the library takes off its inbound queue: the reader reads on once it has drained.
      messageStrategy: {
        handleMessage: (msg, next) => {
          this.reader.taken(msg);
          return next(msg);
        },
      },
    });
    this.conn.onNotification((method, params) => opts.onNotification?.(method, params));
    // The library takes `$/progress` for its own progress handlers and hands on the rest here.
    this.conn.onUnhandledProgress((params) => opts.onNotification?.('$/progress', params));
    this.conn.onRequest((method, params) => this.answer(method, params));
    this.conn.listen();
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Why the connection closed, if it was not closed by us. */
  get closeReason(): Error | undefined {
    return this.closedWith;
  }

  /** The most inbound messages the library ever held queued at once (the reader's bound). */
  get inboundHighWater(): number {
    return this.reader.highWaterMessages;
  }

  /** Register a waiter that is not a request (readiness, diagnostics window). */
  hold(budget: Budget): () => void {
    this.holders.add(budget);
    return () => this.holders.delete(budget);
  }

  request<T = unknown>(method: string, params?: unknown, opts: RequestOptions = {}): Promise<T> {
    if (this.isClosed) return Promise.reject(this.closedError());
    if (opts.signal?.aborted) return Promise.reject(abortReason(opts.signal));
    return new Promise<T>((resolve, reject) => {
      const { signal, budget } = opts;
      const p: Pending = { id: undefined, budget, reject, cleanup: () => {} };
      const settle = (): boolean => {
        if (!this.pending.delete(p)) return false;
        if (p.id !== undefined) this.byId.delete(p.id);
        p.cleanup();
        return true;
      };
      let answer: Promise<unknown>;
      this.sending = p;
      this.pending.add(p);
      try {
        // No params member at all when there are none: `shutdown` must go without.
        answer = params === undefined || params === null ? this.conn.sendRequest(method) : this.conn.sendRequest(method, params);
      } catch (err) {
        settle();
        reject(this.mapError(err));
        return;
      } finally {
        this.sending = undefined;
      }
      if (p.id === undefined && !this.isClosed) {
        // Budgets need the id; the library has always written a request before sendRequest returns.
        settle();
        reject(new Error(`vscode-jsonrpc did not write the ${method} request synchronously`));
        return;
      }
      const onAbort = () => {
        if (!settle()) return;
        this.cancel(p.id!, answer, opts);
        reject(abortReason(signal!));
      };
      const offBudget = budget?.onExceeded((err) => {
        if (!settle()) return;
        this.cancel(p.id!, answer, opts);
        reject(err);
      });
      if (budget && this.pending.has(p)) this.holders.add(budget);
      signal?.addEventListener('abort', onAbort, { once: true });
      p.cleanup = () => {
        signal?.removeEventListener('abort', onAbort);
        offBudget?.();
        if (budget) this.holders.delete(budget);
      };
      if (!this.pending.has(p)) p.cleanup(); // settled while it was being set up (closed, or tripped at once)
      answer.then(
        (result) => {
          if (settle()) resolve((result ?? null) as T);
        },
        (err: unknown) => {
          if (settle()) reject(this.mapError(err));
        },
      );
    });
  }

  notify(method: string, params?: unknown): void {
    if (this.isClosed) return;
    const sent = params === undefined || params === null ? this.conn.sendNotification(method) : this.conn.sendNotification(method, params);
    sent.catch(() => {}); // our writer never fails a write; a wedged or gone server closes the connection instead
  }

  /** Fail every pending request, stop reading. Idempotent. */
  close(err?: Error): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.closedWith = err;
    const reason = this.closedError();
    for (const p of [...this.pending]) {
      this.pending.delete(p);
      p.cleanup();
      p.reject(reason);
    }
    this.byId.clear();
    for (const t of this.watches) clearTimeout(t);
    this.watches.clear();
    this.conn.dispose(); // rejects the library's own pending promises (ours are settled) and disposes reader and writer
    this.opts.onClose?.(err);
  }

  /** Every way a request fails, mapped once: a closed connection, or the server's own error answer. */
  private mapError(err: unknown): Error {
    if (this.isClosed) return this.closedError();
    if (err instanceof ResponseError) return err;
    // The library failed the request itself: an answer with neither result nor error.
    return new ResponseError(RpcErrorCodes.InvalidRequest, err instanceof Error ? err.message : String(err));
  }

  private closedError(): Error {
    const why = this.closedWith;
    if (why instanceof FrameError) return new ConnectionClosedError(`protocol violation: ${why.message}`);
    if (why === undefined || why instanceof ConnectionClosedError) return why ?? new ConnectionClosedError('the connection is closed');
    return new ConnectionClosedError(why.message);
  }

  /** `$/cancelRequest` for the request's id, and a watch for the answer a cooperative server still sends. */
  private cancel(id: JsonRpcId, answer: Promise<unknown>, opts: RequestOptions): void {
    if (this.isClosed) return;
    this.conn.sendNotification('$/cancelRequest', { id }).catch(() => {}); // our writer never fails a write
    if (opts.cancelGraceMs === undefined || !opts.onUnanswered) return;
    const t = setTimeout(() => {
      this.watches.delete(t);
      if (!this.isClosed) opts.onUnanswered!();
    }, opts.cancelGraceMs);
    t.unref();
    this.watches.add(t);
    const answered = () => {
      clearTimeout(t);
      this.watches.delete(t);
    };
    answer.then(answered, answered);
  }

  /** Charge what the server sent before the library sees it; false drops it. */
  private inspect(msg: Message, bytes: number): boolean {
    if (this.isClosed) return false;
    if (!Message.isRequest(msg) && Message.isResponse(msg)) {
      // A response charges its own request; one to nothing we wait on (a late answer to a
      // cancelled request) charges nobody.
      if (msg.id !== null) this.byId.get(msg.id)?.budget?.charge(1, bytes);
      return !this.isClosed;
    }
    const n = this.holders.size;
    if (n > 0) for (const b of [...this.holders]) b.charge(1 / n, bytes / n);
    return !this.isClosed;
  }

  private answer(method: string, params: unknown): unknown {
    let result: unknown;
    try {
      result = this.opts.onRequest ? this.opts.onRequest(method, params) : METHOD_NOT_FOUND;
    } catch {
      result = METHOD_NOT_FOUND;
    }
    if (result === METHOD_NOT_FOUND) return new ResponseError(RpcErrorCodes.MethodNotFound, `unhandled method ${method}`);
    return result ?? null;
  }
}

/** Return this from an onRequest handler for a method the client does not serve. */
export const METHOD_NOT_FOUND: unique symbol = Symbol('method-not-found');

/** The server answered a request with MethodNotFound: it does not serve that method at all. */
export function isMethodNotFound(err: unknown): boolean {
  return err instanceof ResponseError && err.code === RpcErrorCodes.MethodNotFound;
}

function abortReason(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new Error('aborted');
}

/** The library's log lines, first line only and cut short: they can quote what the server sent. */
function libraryLogger(log: ((message: string) => void) | undefined): Logger {
  const line = (m: string) => log?.(m.split('\n', 1)[0]!.slice(0, 200));
  return { error: line, warn: line, info: line, log: line };
}
