// The writer threads the store's uploads share (write-worker.js). Each upload is
// a job pinned to one thread, so its operations stay in order; jobs go to the
// least busy thread, so two uploads write in parallel. A thread that dies fails
// only the jobs it held and is replaced on next use. Threads keep the process
// alive only while they hold a job.
import { Worker } from 'node:worker_threads';
import type { WriteBatch, WriteReply } from './write-protocol.js';

/** Two threads: uploads are disk-bound, and the machines have two cores. */
const THREADS = 2;
/**
 * Batch buffers travel to a thread and back and are reused: fresh ones would be
 * freed only when the thread's GC gets to them, and V8 lets tens of MiB of such
 * external memory pile up first (measured: RSS kept rising with the upload's size).
 */
const POOLED_BUFFER_BYTES = 320 * 1024;
const MAX_POOLED_BUFFERS = 40;
const freeBuffers: ArrayBuffer[] = [];

/** A buffer of at least `bytes`: a pooled one when it fits. */
export function takeBuffer(bytes: number): ArrayBuffer {
  if (bytes > POOLED_BUFFER_BYTES) return new ArrayBuffer(bytes);
  return freeBuffers.pop() ?? new ArrayBuffer(POOLED_BUFFER_BYTES);
}

function giveBack(buf: ArrayBuffer): void {
  if (buf.byteLength === POOLED_BUFFER_BYTES && freeBuffers.length < MAX_POOLED_BUFFERS) freeBuffers.push(buf);
}

export interface JobHandler {
  onReply(reply: WriteReply): void;
  /** The thread stopped with this job unfinished. */
  onThreadLost(err: Error): void;
}

interface Thread {
  worker: Worker;
  /** Resolves once the thread has loaded and listens (its first message). */
  ready: Promise<void>;
  jobs: Map<number, JobHandler>;
}

export interface WriterLane {
  job: number;
  post(batch: WriteBatch): void;
  /** The job is over: stop routing replies to it. */
  release(): void;
}

let nextJob = 1;
const threads: (Thread | undefined)[] = [];

/**
 * Start every writer thread ahead of the first upload, which would otherwise pay
 * the thread's start-up (tens of ms); resolves once they have loaded. (Threads
 * starting beside the boot canary were once blamed for a not-ready start; the cause
 * was a jail's unread stdout being flushed at exit, fixed in jail/spawn.ts.)
 */
export async function warmWriterThreads(): Promise<void> {
  for (let slot = 0; slot < THREADS; slot++) threads[slot] ??= startThread(slot);
  await Promise.all(threads.map((t) => t?.ready));
}

/** Stop every thread; jobs they held fail. The next job starts a thread again. */
export async function stopWriterThreads(): Promise<void> {
  const live = threads.splice(0).filter((t): t is Thread => t !== undefined);
  await Promise.all(live.map((t) => t.worker.terminate()));
}

/** A lane to a writer thread for one new job. */
export function openLane(handler: JobHandler): WriterLane {
  const t = pickThread();
  const job = nextJob++;
  t.jobs.set(job, handler);
  t.worker.ref();
  return {
    job,
    post: (batch) => t.worker.postMessage(batch, [batch.data]),
    release: () => {
      t.jobs.delete(job);
      if (t.jobs.size === 0) t.worker.unref();
    },
  };
}

/** An idle thread, else a new one while there is room, else the least busy. */
function pickThread(): Thread {
  const live = threads.filter((t): t is Thread => t !== undefined);
  const idle = live.find((t) => t.jobs.size === 0);
  if (idle) return idle;
  const free = threads.length < THREADS ? threads.length : threads.indexOf(undefined);
  if (free >= 0) return (threads[free] = startThread(free));
  return live.reduce((a, b) => (b.jobs.size < a.jobs.size ? b : a));
}

function startThread(slot: number): Thread {
  const worker = spawnWorker('write-worker');
  let loaded!: () => void;
  let cause: Error | undefined;
  const t: Thread = { worker, jobs: new Map(), ready: new Promise<void>((resolve) => (loaded = resolve)) };
  worker.unref();
  worker.on('message', (r: WriteReply | 'ready') => {
    if (r === 'ready') return loaded();
    giveBack(r.data);
    t.jobs.get(r.job)?.onReply(r);
  });
  worker.on('error', (err) => (cause = err));
  worker.on('exit', (code) => {
    loaded(); // a thread that never loaded: its jobs fail below, or the next one starts anew
    if (threads[slot] === t) threads[slot] = undefined;
    if (t.jobs.size === 0) return;
    const err = new Error(`the store's writer thread stopped (exit ${code}${cause ? `: ${cause.message}` : ''})`);
    for (const h of t.jobs.values()) h.onThreadLost(err);
    t.jobs.clear();
  });
  return t;
}

/** The thread's entry is plain JavaScript (write-worker.js says why): nothing to register first. */
function spawnWorker(name: string): Worker {
  return new Worker(new URL(`./${name}.js`, import.meta.url));
}
