// A PUT of a gzipped tar while /livez is polled beside it: hostile uploads must never
// stall the one event loop every org shares (store-hostile, store-compose-links).
import type { Daemon } from './daemon.js';

/** PUT while polling /livez; every poll must be answered (a generous ceiling: "answered", not "fast"). */
export async function putWatchingLivez(
  d: Daemon,
  path: string,
  body: Buffer,
): Promise<{ status: number; body: Record<string, unknown>; polls: number; unanswered: number }> {
  let done = false;
  let polls = 0;
  let unanswered = 0;
  const watch = (async () => {
    while (!done) {
      polls++;
      const r = await fetch(`${d.url}/livez`, { signal: AbortSignal.timeout(30_000) }).catch(() => undefined);
      if (r?.status !== 200) unanswered++;
      await r?.arrayBuffer();
      await new Promise((res) => setTimeout(res, 5));
    }
  })();
  try {
    const r = await fetch(`${d.url}/v1/roots/${path}`, { method: 'PUT', body, headers: { 'content-type': 'application/gzip' } });
    return { status: r.status, body: (await r.json()) as Record<string, unknown>, polls, unanswered };
  } finally {
    done = true;
    await watch;
  }
}
