// Deadlines for one piece of work.
//
// A query builds these on every answer: no named arrow (`const f = () =>`, `{ f: () => }`)
// on that path, since tsx compiles with esbuild's keepNames and each one made costs a
// defineProperty of its name (~0.8 µs each, bench/hot-profile's `__name`); a method
// shorthand or an arrow passed as an argument costs nothing of the kind.
//
// `deadline`: a signal that aborts when `outer` does or when `ms` have passed. Not
// AbortSignal.any([outer, AbortSignal.timeout(ms)]): on Node 20 the timeout signal
// inside a composite is held only weakly (by its timer and by the composite), so a
// GC can collect it and the composite then never times out (nodejs/node#57736). A
// query waiting on such a signal hung until the client gave up. Here the timer
// holds the controller strongly; `clear` releases both when the work is done.

export interface Deadline {
  signal: AbortSignal;
  clear: () => void;
}

/** The same reason AbortSignal.timeout gives, so callers can tell a timeout apart. */
const timedOut = () => new DOMException('The operation was aborted due to timeout', 'TimeoutError');

export function deadline(outer: AbortSignal, ms: number): Deadline {
  const ctl = new AbortController();
  const onAbort = () => ctl.abort(outer.reason);
  if (outer.aborted) onAbort();
  else outer.addEventListener('abort', onAbort, { once: true });
  const timer = setTimeout(() => ctl.abort(timedOut()), Math.max(1, ms));
  return {
    signal: ctl.signal,
    clear() {
      clearTimeout(timer);
      outer.removeEventListener('abort', onAbort);
    },
  };
}

/**
 * A deadline that the caller's hang-up also ends, for a caller with no signal of its
 * own (an HTTP query: `onHangUp` registers the callback): one controller per query,
 * not one for the client and one for the deadline. `client.aborted` says it was the
 * hang-up.
 */
export function hangUpDeadline(onHangUp: (gone: () => void) => void, ms: number): Deadline & { client: { readonly aborted: boolean } } {
  const ctl = new AbortController();
  const client = { aborted: false };
  onHangUp(() => {
    client.aborted = true;
    ctl.abort(new Error('client disconnected'));
  });
  const timer = setTimeout(() => ctl.abort(timedOut()), Math.max(1, ms));
  return {
    signal: ctl.signal,
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
export function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e as Error);
      },
    );
  });
}
