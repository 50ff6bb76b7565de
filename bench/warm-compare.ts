// What the warm-path benches (bench/overhead, bench/overhead-real) share: a query
// timed, the HTTP floor (GET /livez over the same kept-alive connection, under the
// same load), percentiles, the table's number format.
import { request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { agent } from './keep-alive.js';

/** GET /livez over the same connection: the HTTP floor (client, socket, fastify) under the same load. */
export function livez(url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/livez`, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve());
    });
    req.on('error', reject);
    req.end();
  });
}

/** The p-th percentile (nearest rank) of xs. */
export const pct = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

/** ms, two decimals, right-aligned in 8. */
export const f = (ms: number): string => ms.toFixed(2).padStart(8);

/** ms fn took to settle. */
export async function time(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}
