// @ts-check
// The remover thread (remove-tree.ts): deletes one directory tree at a time with
// synchronous calls on this thread, so none of it waits in, or fills, libuv's pool.
// Plain JavaScript for the reason write-worker.js gives. rmSync never follows a
// symbolic link: a link is removed as itself.
import { rmSync } from 'node:fs';
import { parentPort } from 'node:worker_threads';

if (!parentPort) throw new Error('remove-worker.js runs as a worker thread');
const port = parentPort;
port.on('message', (/** @type {{ id: number; dir: string }} */ m) => {
  try {
    rmSync(m.dir, { recursive: true, force: true, maxRetries: 3 });
    port.postMessage({ id: m.id });
  } catch (err) {
    const e = /** @type {NodeJS.ErrnoException} */ (err);
    port.postMessage({ id: m.id, error: e.message, code: e.code });
  }
});
