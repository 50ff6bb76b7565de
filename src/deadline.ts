// A signal that aborts when `outer` does or when `ms` have passed. Not
// AbortSignal.any([outer, AbortSignal.timeout(ms)]): on Node 20 the timeout signal
// inside a composite is held only weakly (by its timer and by the composite), so a
// GC can collect it and the composite then never times out (nodejs/node#57736). A
// query waiting on such a signal hung until the client gave up. Here the timer
// holds the controller strongly; `clear` releases both when the work is done.

export interface Deadline {
  signal: AbortSignal;
  clear: () => void;
}

export function deadline(outer: AbortSignal, ms: number): Deadline {
  const ctl = new AbortController();
  const onAbort = () => ctl.abort(outer.reason);
  if (outer.aborted) onAbort();
  else outer.addEventListener('abort', onAbort, { once: true });
  // The same reason AbortSignal.timeout gives, so callers can tell a timeout apart.
  const timer = setTimeout(() => ctl.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), Math.max(1, ms));
  return {
    signal: ctl.signal,
    clear: () => {
      clearTimeout(timer);
      outer.removeEventListener('abort', onAbort);
    },
  };
}
