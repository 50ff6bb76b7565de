// Removing a directory tree without stalling every other file operation of the
// daemon. fs.promises.rm(dir, { recursive }) queues an operation for each entry of
// a directory at once (Node's rimraf runs them in parallel) on libuv's pool, the
// four threads every fs call of the daemon shares, first come first served.
// Measured: a stat queued behind the removal of a 40,000-file tree waited 701 ms.
// A query's target checks, workspace look-up and previews are such calls, so one
// org's DELETE, an eviction or a failed upload stalled every org's queries. Here a
// thread of its own (remove-worker.js) removes one tree at a time with synchronous
// calls; the pool never sees them. The thread keeps the process alive only while
// it holds a removal, and one that dies fails what it held and is replaced.
import { Worker } from 'node:worker_threads';

interface Pending {
  resolve: () => void;
  reject: (err: Error) => void;
}

let thread: Worker | undefined;
let nextId = 1;
const pending = new Map<number, Pending>();

function remover(): Worker {
  if (thread) return thread;
  const w = new Worker(new URL('./remove-worker.js', import.meta.url));
  let cause: Error | undefined;
  w.unref();
  w.on('message', (m: { id: number; error?: string; code?: string }) => {
    const p = pending.get(m.id);
    pending.delete(m.id);
    if (pending.size === 0) w.unref();
    if (m.error === undefined) p?.resolve();
    else p?.reject(Object.assign(new Error(m.error), { code: m.code }));
  });
  w.on('error', (err) => (cause = err));
  w.on('exit', (code) => {
    if (thread === w) thread = undefined;
    const err = new Error(`the store's remover thread stopped (exit ${code}${cause ? `: ${cause.message}` : ''})`);
    for (const p of pending.values()) p.reject(err);
    pending.clear();
  });
  return (thread = w);
}

/** `rm -rf dir` on the remover thread: resolves once it is gone (or never was). */
export function removeTree(dir: string): Promise<void> {
  const w = remover();
  const id = nextId++;
  return new Promise<void>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    w.ref();
    w.postMessage({ id, dir });
  });
}
