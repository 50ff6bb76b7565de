// A bounded JSON-RPC 2.0 client over a language server's stdio. Our own requests
// go straight through the bounded writer with ids we give them, and their answers
// are matched by id as the reader parses them, in the same turn; vscode-jsonrpc's
// MessageConnection does the rest: dispatch of the server's requests to us and of
// its notifications (`$/progress` included), on the same reader and writer. Why
// not the library's sendRequest too (as this file did until issue 28): it queues
// every inbound message and hands the queue one message per event-loop turn behind
// a few promise hops, and its request path allocated a promise, a map entry and an
// id sniffed off the wire per query; for answers we match by id ourselves, that
// was a fifth of the daemon's transport cost per warm answer. The bounds are ours,
// in the reader and writer (bounded-reader.ts: frame ceiling checked from the
// header, a short inbound queue; bounded-writer.ts: a server that stops reading
// cannot make us queue writes) and in the budgets charged here as messages are read.
//
// Budgets: every waiter (a request, or a session waiting for readiness or
// diagnostics) holds a Budget. A response charges its own request in full; every
// other inbound message is shared out among the holders at that moment, so a
// notification flood fails the waiters quickly while 50 concurrent requests on one
// session do not starve each other on the progress chatter they cause together.
//
// An abort (the query's deadline or hang-up) or a tripped budget fails the request
// at once and sends `$/cancelRequest` for its id; a cancelled request the server
// never answers within `cancelGraceMs` is reported (`onUnanswered`).
//
// `shutdown` goes without params: no params member is put on the wire when there
// are none, where `params: null` would be one, which TypeScript 7 rejects
// (https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#shutdown).
import type { Readable, Writable } from 'node:stream';
import { createMessageConnection, ErrorCodes as RpcErrorCodes, Message, ResponseError, type Logger, type MessageConnection } from 'vscode-jsonrpc/node';
import { BoundedMessageReader } from './bounded-reader.js';
import { BoundedMessageWriter } from './bounded-writer.js';
import { FrameError } from './frame-reader.js';
import type { Abortable } from '../../util/deadline.js';

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
  signal?: Abortable;
  budget?: Budget;
  /** After a cancel, how long the server has to answer before `onUnanswered` fires. */
  cancelGraceMs?: number;
  /** The server never answered a cancelled request (its method given): it has stopped working. */
  onUnanswered?: (method: string) => void;
}

type ServerRequestHandler = (method: string, params: unknown) => unknown;
type NotificationHandler = (method: string, params: unknown) => void;

/**
 * One of our requests waiting for its answer (kept by its id in `pending`). It is its
 * own abort listener (`handleEvent`) and undoes its holds in `release`: no closures
 * made per request (under tsx's keepNames each named one costs a defineProperty).
 */
class Pending {
  offBudget: (() => void) | undefined;

  constructor(
    private readonly conn: LspConnection,
    readonly id: number,
    readonly method: string,
    readonly resolve: (value: unknown) => void,
    readonly reject: (e: Error) => void,
    readonly opts: RequestOptions,
  ) {}

  /** The request's signal aborted. */
  handleEvent(): void {
    this.conn.giveUp(this.id, abortReason(this.opts.signal!));
  }

  release(holders: Set<Budget>): void {
    this.opts.signal?.removeEventListener('abort', this);
    this.offBudget?.();
    if (this.opts.budget) holders.delete(this.opts.budget);
  }
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
  private readonly writer: BoundedMessageWriter;
  private readonly conn: MessageConnection;
  /** Our requests in flight, by the id we gave them (the library sends none: no id of its own can collide). */
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /** Cancelled requests whose late answer we still watch for, by id. */
  private readonly watches = new Map<number, NodeJS.Timeout>();
  private readonly holders = new Set<Budget>();
  private closedWith: Error | undefined;
  private isClosed = false;

  constructor(opts: ConnectionOptions) {
    this.opts = opts;
    this.reader = new BoundedMessageReader(opts.input, { maxFrameBytes: opts.maxFrameBytes, inspect: (msg, bytes) => this.inspect(msg, bytes) });
    this.writer = new BoundedMessageWriter(opts.output, { maxQueuedWriteBytes: opts.maxQueuedWriteBytes ?? 8 * 1024 * 1024 });
    this.reader.onError((err) => this.close(err));
    this.reader.onClose(() => this.close(new ConnectionClosedError('the server closed its output')));
    this.writer.onError(([err]) => this.close(err));
    this.conn = createMessageConnection(this.reader, this.writer, libraryLogger(opts.log), {
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
    const { signal, budget } = opts;
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (budget?.exceeded) return Promise.reject(budget.exceeded);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const p = new Pending(this, id, method, resolve as (v: unknown) => void, reject, opts);
      this.pending.set(id, p);
      if (budget) {
        p.offBudget = budget.onExceeded((err) => this.giveUp(id, err));
        this.holders.add(budget);
      }
      signal?.addEventListener('abort', p, { once: true });
      // No params member at all when there are none: `shutdown` must go without.
      // A write past the bound closes the connection, which fails this request too.
      this.writer.write(params === undefined || params === null ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
    });
  }

  notify(method: string, params?: unknown): void {
    if (this.isClosed) return;
    this.writer.write(params === undefined || params === null ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params });
  }

  /** Fail every pending request, stop reading. Idempotent. */
  close(err?: Error): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.closedWith = err;
    const reason = this.closedError();
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) {
      p.release(this.holders);
      p.reject(reason);
    }
    for (const t of this.watches.values()) clearTimeout(t);
    this.watches.clear();
    this.conn.dispose(); // disposes reader and writer
    this.opts.onClose?.(err);
  }

  private closedError(): Error {
    const why = this.closedWith;
    if (why instanceof FrameError) return new ConnectionClosedError(`protocol violation: ${why.message}`);
    if (why === undefined || why instanceof ConnectionClosedError) return why ?? new ConnectionClosedError('the connection is closed');
    return new ConnectionClosedError(why.message);
  }

  /** Take request `id` out of the table; undefined if it was settled already. */
  private settle(id: number): Pending | undefined {
    const p = this.pending.get(id);
    if (!p) return undefined;
    this.pending.delete(id);
    p.release(this.holders);
    return p;
  }

  /** Fail a request we no longer wait for (aborted, over its budget) and tell the server; its Pending calls this on abort. */
  giveUp(id: number, err: Error): void {
    const p = this.settle(id);
    if (!p) return;
    this.cancel(id, p.method, p.opts);
    p.reject(err);
  }

  /** `$/cancelRequest` for the request's id, and a watch for the answer a cooperative server still sends. */
  private cancel(id: number, method: string, opts: RequestOptions): void {
    if (this.isClosed) return;
    this.notify('$/cancelRequest', { id });
    if (opts.cancelGraceMs === undefined || !opts.onUnanswered) return;
    const t = setTimeout(() => {
      this.watches.delete(id);
      if (!this.isClosed) opts.onUnanswered!(method);
    }, opts.cancelGraceMs);
    t.unref();
    this.watches.set(id, t);
  }

  /** An answer to one of ours, or to nothing we wait on (a late answer to a cancelled request). */
  private onResponse(msg: { id: number | string; result?: unknown; error?: unknown }, bytes: number): void {
    const id = msg.id as number; // ours are numbers: a string matches nothing
    const watched = this.watches.get(id);
    if (watched !== undefined) {
      clearTimeout(watched);
      this.watches.delete(id);
    }
    this.pending.get(id)?.opts.budget?.charge(1, bytes); // may trip it: then it is failed, and cancelled
    const p = this.settle(id);
    if (!p) return;
    if (msg.error !== undefined) p.reject(responseError(msg.error));
    else if ('result' in msg) p.resolve(msg.result ?? null);
    else p.reject(new ResponseError(RpcErrorCodes.InvalidRequest, 'the server answered with neither a result nor an error'));
  }

  /** Every message the server sends, before the library sees it: charged, and answers taken here; false keeps it from the library. */
  private inspect(msg: Message, bytes: number): boolean {
    if (this.isClosed) return false;
    const m = msg as { id?: unknown; method?: unknown };
    if (m.method === undefined && (typeof m.id === 'number' || typeof m.id === 'string')) {
      this.onResponse(m as { id: number | string }, bytes);
      return false;
    }
    // A notification, a request to us, or a message without a method or an id: nobody's own.
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

/** The server's error answer as the library's error class (a malformed one still fails the request). */
function responseError(e: unknown): ResponseError<unknown> {
  const o = (typeof e === 'object' && e !== null ? e : {}) as { code?: unknown; message?: unknown; data?: unknown };
  const code = typeof o.code === 'number' && Number.isInteger(o.code) ? o.code : RpcErrorCodes.InternalError;
  return new ResponseError(code, typeof o.message === 'string' ? o.message : 'the server answered with an error', o.data);
}

/** Return this from an onRequest handler for a method the client does not serve. */
export const METHOD_NOT_FOUND: unique symbol = Symbol('method-not-found');

/** The server answered a request with MethodNotFound: it does not serve that method at all. */
export function isMethodNotFound(err: unknown): boolean {
  return err instanceof ResponseError && err.code === RpcErrorCodes.MethodNotFound;
}

function abortReason(signal: Abortable): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new Error('aborted');
}

/** The library's log lines, first line only and cut short: they can quote what the server sent. */
function libraryLogger(log: ((message: string) => void) | undefined): Logger {
  const line = (m: string) => log?.(m.split('\n', 1)[0]!.slice(0, 200));
  return { error: line, warn: line, info: line, log: line };
}
