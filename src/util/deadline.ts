// Deadlines for one piece of work.
//
// A query builds these on every answer: no named arrow (`const f = () =>`, `{ f: () => }`)
// on that path, since tsx compiles with esbuild's keepNames and each one made costs a
// defineProperty of its name (~0.8 µs each, bench/hot-profile's `__name`); a method
// shorthand or an arrow passed as an argument costs nothing of the kind.
//
// The signal a deadline gives is its own small `DeadlineSignal`, not an AbortController's:
// an AbortSignal is an EventTarget, and making one and adding and removing its listener
// cost ~8 µs a query (bench/hot-profile's createAbortSignal, the largest item of our
// own on a warm answer), against ~1 for this. What waits on a deadline takes an
// `Abortable`, which both are; the type keeps a DeadlineSignal from reaching a Node API
// that needs a real AbortSignal (`asAbortSignal` lends one where it must).
//
// `deadline`: a signal that aborts when `outer` does or when `ms` have passed. Not
// AbortSignal.any([outer, AbortSignal.timeout(ms)]): on Node 20 the timeout signal
// inside a composite is held only weakly (by its timer and by the composite), so a
// GC can collect it and the composite then never times out (nodejs/node#57736). A
// query waiting on such a signal hung until the client gave up. Here the timer
// holds the signal strongly; `clear` releases both when the work is done.

/** An abort listener: a function, or an object that is its own (`handleEvent`), as EventTarget takes. */
export type AbortListener = (() => void) | { handleEvent(): void };

/** What waiting on a deadline needs of a signal: an AbortSignal has it, and so does a DeadlineSignal. */
export interface Abortable {
  readonly aborted: boolean;
  readonly reason: unknown;
  addEventListener(type: 'abort', listener: AbortListener, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: AbortListener): void;
}

/**
 * An AbortSignal's contract for the 'abort' event alone: it aborts once, with its
 * reason; each listener runs once, in the order added; one added twice counts once;
 * one added after the abort never runs (check `aborted` first, as with AbortSignal),
 * nor one an earlier listener removed;
 * a listener that throws does not stop the others, and its error is thrown on the
 * next tick, as EventTarget reports it.
 */
export class DeadlineSignal implements Abortable {
  aborted = false;
  reason: unknown = undefined;
  private listeners: AbortListener[] | undefined;

  addEventListener(_type: 'abort', listener: AbortListener, _options?: { once?: boolean }): void {
    if (this.aborted) return;
    const ls = (this.listeners ??= []);
    if (!ls.includes(listener)) ls.push(listener);
  }

  removeEventListener(_type: 'abort', listener: AbortListener): void {
    const ls = this.listeners;
    const i = ls === undefined ? -1 : ls.indexOf(listener);
    if (i >= 0) ls!.splice(i, 1);
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const ls = this.listeners;
    if (ls === undefined) return;
    // Over a copy, each still held when its turn comes: one an earlier listener removed does not run.
    for (const l of ls.slice()) {
      const i = ls.indexOf(l);
      if (i < 0) continue;
      ls.splice(i, 1);
      try {
        if (typeof l === 'function') l();
        else l.handleEvent();
      } catch (err) {
        process.nextTick(rethrow, err);
      }
    }
    this.listeners = undefined;
  }
}

/**
 * `s` as a real AbortSignal, for a Node API that takes one (an Abortable is one of the
 * two): a DeadlineSignal lends one that follows it, made per call (not on a query's path).
 */
export function asAbortSignal(s: Abortable): AbortSignal {
  if (!(s instanceof DeadlineSignal)) return s as AbortSignal;
  const ctl = new AbortController();
  if (s.aborted) ctl.abort(s.reason);
  else s.addEventListener('abort', () => ctl.abort(s.reason));
  return ctl.signal;
}

function rethrow(err: unknown): never {
  throw err;
}

export interface Deadline {
  signal: DeadlineSignal;
  clear: () => void;
}

/** The same reason AbortSignal.timeout gives, so callers can tell a timeout apart. */
const timedOut = () => new DOMException('The operation was aborted due to timeout', 'TimeoutError');

/** The timer's callback: the signal is its argument, so no closure is made per deadline. */
function expire(signal: DeadlineSignal): void {
  signal.abort(timedOut());
}

/** Aborts `signal` with `outer`'s reason: an abort listener that is an object, not a named closure. */
class Follow {
  constructor(
    private readonly outer: Abortable,
    private readonly signal: DeadlineSignal,
  ) {}

  handleEvent(): void {
    this.signal.abort(this.outer.reason);
  }
}

export function deadline(outer: Abortable, ms: number): Deadline {
  const signal = new DeadlineSignal();
  const follow = new Follow(outer, signal);
  if (outer.aborted) follow.handleEvent();
  else outer.addEventListener('abort', follow, { once: true });
  const timer = setTimeout(expire, Math.max(1, ms), signal);
  return {
    signal,
    clear() {
      clearTimeout(timer);
      outer.removeEventListener('abort', follow);
    },
  };
}

/**
 * A deadline that the caller's hang-up also ends, for a caller with no signal of its
 * own (an HTTP query: `onHangUp` registers the callback): one signal per query,
 * not one for the client and one for the deadline. `client.aborted` says it was the
 * hang-up.
 */
export function hangUpDeadline(onHangUp: (gone: () => void) => void, ms: number): Deadline & { client: { readonly aborted: boolean } } {
  const signal = new DeadlineSignal();
  const client = { aborted: false };
  onHangUp(() => {
    client.aborted = true;
    signal.abort(new Error('client disconnected'));
  });
  const timer = setTimeout(expire, Math.max(1, ms), signal);
  return {
    signal,
    client,
    clear() {
      clearTimeout(timer);
    },
  };
}

// `raceAbort`: waiting on something shared (a session's start, an in-flight slot, a
// batch member) under one caller's deadline: the caller stops waiting when its
// signal aborts; the shared thing carries on for everyone else.
/** Await p, or reject with the signal's reason when it aborts first. */
export function raceAbort<T>(p: Promise<T>, signal: Abortable): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const race = new Race(signal, reject);
    signal.addEventListener('abort', race, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', race);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', race);
        reject(e as Error);
      },
    );
  });
}

/** raceAbort's abort listener (an object: a named closure costs a defineProperty per call, see the top). */
class Race {
  constructor(
    private readonly signal: Abortable,
    private readonly reject: (e: Error) => void,
  ) {}

  handleEvent(): void {
    this.reject(this.signal.reason as Error);
  }
}
