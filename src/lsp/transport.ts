// A bounded JSON-RPC 2.0 client over a language server's stdio: requests with
// ids and cancellation, notifications both ways, answers to the few requests a
// server makes of its client. Framing is FrameReader's (bounded before allocation).
//
// Why not vscode-jsonrpc's MessageConnection: its reader has no frame ceiling
// (see frame-reader.ts), `sendRequest('shutdown', null)` puts `params: [null]` on
// the wire, which TypeScript 7 rejects (shutdown must carry no params,
// https://microsoft.github.io/language-server-protocol/specifications/lsp/3.17/specification/#shutdown),
// and it has no hook for what DESIGN.md asks per request: at most N messages and
// M bytes of server output inspected while a request waits. Owning the ~300 lines
// keeps every bound in one place.
//
// Budgets: every waiter (a request, or a session waiting for readiness or
// diagnostics) holds a Budget. A response charges its own request in full; every
// other inbound message is shared out among the holders at that moment, so a
// notification flood fails the waiters quickly while 50 concurrent requests on one
// session do not starve each other on the progress chatter they cause together.
import type { Readable, Writable } from 'node:stream';
import { FrameError, FrameReader } from './frame-reader.js';

export type JsonRpcId = number | string;

/** An error response from the server (a well-formed JSON-RPC error). */
export class ResponseError extends Error {
  override name = 'ResponseError';
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

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

interface Pending {
  method: string;
  budget: Budget | undefined;
  resolve: (v: unknown) => void;
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
}

export class LspConnection {
  private readonly opts: ConnectionOptions;
  private readonly reader: FrameReader;
  private readonly pending = new Map<JsonRpcId, Pending>();
  /** Cancelled ids whose answer we still expect, with the timer that gives up on it. */
  private readonly cancelled = new Map<JsonRpcId, NodeJS.Timeout>();
  private readonly holders = new Set<Budget>();
  private nextId = 1;
  private closedWith: Error | undefined;
  private isClosed = false;

  constructor(opts: ConnectionOptions) {
    this.opts = opts;
    this.reader = new FrameReader({
      maxFrameBytes: opts.maxFrameBytes,
      onMessage: (msg, bytes) => this.dispatch(msg as Record<string, unknown>, bytes),
      onError: (err) => this.close(err),
    });
    opts.input.on('data', (chunk: Buffer) => this.reader.push(chunk));
    opts.input.on('end', () => this.close(new ConnectionClosedError('the server closed its output')));
    opts.input.on('error', (err) => this.close(new ConnectionClosedError(`server output failed: ${err.message}`)));
    // EPIPE when the server is gone: the exit path reports it; do not crash the daemon.
    opts.output.on('error', (err) => this.close(new ConnectionClosedError(`server input failed: ${err.message}`)));
  }

  get closed(): boolean {
    return this.isClosed;
  }

  /** Why the connection closed, if it was not closed by us. */
  get closeReason(): Error | undefined {
    return this.closedWith;
  }

  /** Register a waiter that is not a request (readiness, diagnostics window). */
  hold(budget: Budget): () => void {
    this.holders.add(budget);
    return () => this.holders.delete(budget);
  }

  request<T = unknown>(method: string, params?: unknown, opts: RequestOptions = {}): Promise<T> {
    if (this.isClosed) return Promise.reject(this.closedError());
    if (opts.signal?.aborted) return Promise.reject(abortReason(opts.signal));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      const { signal, budget } = opts;
      const onAbort = () => {
        if (!this.pending.has(id)) return;
        this.settle(id);
        this.cancel(id, opts);
        reject(abortReason(signal!));
      };
      const offBudget = budget?.onExceeded((err) => {
        if (!this.pending.has(id)) return;
        this.settle(id);
        this.cancel(id, opts);
        reject(err);
      });
      if (budget) this.holders.add(budget);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.pending.set(id, {
        method,
        budget,
        resolve: resolve as (v: unknown) => void,
        reject,
        cleanup: () => {
          signal?.removeEventListener('abort', onAbort);
          offBudget?.();
          if (budget) this.holders.delete(budget);
        },
      });
      // A params member only when there are params: `shutdown` must go without.
      this.send(params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params });
    });
  }

  notify(method: string, params?: unknown): void {
    if (this.isClosed) return;
    this.send(params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params });
  }

  /** Fail every pending request, stop reading. Idempotent. */
  close(err?: Error): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.closedWith = err;
    const reason = this.closedError();
    for (const [id, p] of this.pending) {
      this.settle(id);
      p.reject(reason);
    }
    for (const t of this.cancelled.values()) clearTimeout(t);
    this.cancelled.clear();
    this.opts.input.removeAllListeners('data');
    this.opts.input.on('error', () => {});
    this.opts.input.resume();
    this.opts.onClose?.(err);
  }

  private closedError(): Error {
    const why = this.closedWith;
    if (why instanceof FrameError) return new ConnectionClosedError(`protocol violation: ${why.message}`);
    return why ?? new ConnectionClosedError('the connection is closed');
  }

  private settle(id: JsonRpcId): Pending | undefined {
    const p = this.pending.get(id);
    if (!p) return undefined;
    this.pending.delete(id);
    p.cleanup();
    return p;
  }

  /** `$/cancelRequest`, and a watch for the answer a cooperative server still sends. */
  private cancel(id: JsonRpcId, opts: RequestOptions): void {
    this.notify('$/cancelRequest', { id });
    if (opts.cancelGraceMs === undefined || !opts.onUnanswered) return;
    const t = setTimeout(() => {
      this.cancelled.delete(id);
      if (!this.isClosed) opts.onUnanswered!();
    }, opts.cancelGraceMs);
    t.unref();
    this.cancelled.set(id, t);
  }

  private send(msg: object): void {
    const body = Buffer.from(JSON.stringify(msg), 'utf8');
    const frame = Buffer.concat([Buffer.from(`Content-Length: ${body.length}\r\n\r\n`, 'latin1'), body]);
    const out = this.opts.output;
    if (out.destroyed || out.writableEnded) return;
    out.write(frame);
    // A server that stops reading its stdin leaves our writes queued in memory;
    // past the bound it is wedged and the session kills it (which unblocks the pipe).
    const max = this.opts.maxQueuedWriteBytes ?? 8 * 1024 * 1024;
    if (out.writableLength > max) {
      this.close(new ConnectionClosedError(`the server stopped reading its input (${out.writableLength} bytes queued)`));
    }
  }

  private dispatch(msg: Record<string, unknown>, bytes: number): void {
    if (this.isClosed) return;
    const hasId = typeof msg.id === 'number' || typeof msg.id === 'string';
    const isResponse = hasId && msg.method === undefined && ('result' in msg || 'error' in msg);
    if (isResponse) {
      const id = msg.id as JsonRpcId;
      const timer = this.cancelled.get(id);
      if (timer) {
        clearTimeout(timer);
        this.cancelled.delete(id);
      }
      const p = this.pending.get(id);
      if (!p) return;
      p.budget?.charge(1, bytes);
      if (!this.pending.has(id)) return; // the charge tripped the budget and rejected it
      this.settle(id);
      const err = msg.error as { code?: unknown; message?: unknown } | undefined;
      if (err) p.reject(new ResponseError(typeof err.code === 'number' ? err.code : 0, String(err.message ?? 'error')));
      else p.resolve(msg.result ?? null);
      return;
    }
    this.chargeHolders(bytes);
    if (this.isClosed) return;
    if (typeof msg.method !== 'string') return; // a response to nothing we asked: ignore
    if (hasId) this.answer(msg.id as JsonRpcId, msg.method, msg.params);
    else this.opts.onNotification?.(msg.method, msg.params);
  }

  private chargeHolders(bytes: number): void {
    const n = this.holders.size;
    if (n === 0) return;
    for (const b of [...this.holders]) b.charge(1 / n, bytes / n);
  }

  private answer(id: JsonRpcId, method: string, params: unknown): void {
    let result: unknown;
    try {
      result = this.opts.onRequest ? this.opts.onRequest(method, params) : METHOD_NOT_FOUND;
    } catch {
      result = METHOD_NOT_FOUND;
    }
    if (result === METHOD_NOT_FOUND) {
      this.send({ jsonrpc: '2.0', id, error: { code: ErrorCodes.MethodNotFound, message: `unhandled method ${method}` } });
    } else {
      this.send({ jsonrpc: '2.0', id, result: result ?? null });
    }
  }
}

/** Return this from an onRequest handler for a method the client does not serve. */
export const METHOD_NOT_FOUND: unique symbol = Symbol('method-not-found');

function abortReason(signal: AbortSignal): Error {
  const r: unknown = signal.reason;
  return r instanceof Error ? r : new Error('aborted');
}
