// The query load bench/load and bench/hot-profile put on a daemon: `clients` workers,
// each looping over the first four of tsCall's questions (definition, hover,
// references, documentSymbols) about warm roots of ts-basic, for `seconds`.
//
// The load generator shares the host's cores with the daemon and the servers, so it
// is kept lean: one undici Pool connection per client, each question's body
// serialised once, no AbortSignal per request (the Pool's header and body timeouts
// bound each one). Every answer is still parsed and checked. The chaos harness's
// Load (a fresh body, signal and result object per request) cost the client 180 µs
// per answer, more than the cached daemon itself.
import { Pool } from 'undici';
import { tsCall, type Root } from '../test/chaos/daemons.js';
import { Figures } from '../test/chaos/harness.js';

/** tsCall's questions 0..3. */
export const TS_OPS = 4;

interface Question {
  path: string;
  body: Buffer;
  check: (body: Record<string, unknown>) => boolean;
}

export interface QueryLoad {
  /** Milliseconds of each answered request (fractional). */
  readonly latencies: number[];
  /** Stop sending, wait for what is in flight, close the connections. */
  stop(): Promise<void>;
}

export function tsQueryLoad(url: string, roots: readonly Root[], clients: number, seconds: number, figures: Figures = new Figures()): QueryLoad {
  const questions: Question[] = [];
  for (let q = 0; q < TS_OPS; q++)
    for (const r of roots) {
      const c = tsCall(r, q);
      questions.push({ path: c.path, body: Buffer.from(JSON.stringify(c.json)), check: c.check ?? (() => true) });
    }
  const pool = new Pool(url, { connections: clients, headersTimeout: 80_000, bodyTimeout: 80_000, keepAliveTimeout: 10_000 });
  const headers = { 'content-type': 'application/json' };
  const latencies: number[] = [];
  const until = Date.now() + seconds * 1000;
  let stopped = false;
  let next = 0;
  const worker = async () => {
    while (!stopped && Date.now() < until) {
      const q = questions[next++ % questions.length]!;
      const t0 = performance.now();
      try {
        const r = await pool.request({ path: q.path, method: 'POST', headers, body: q.body });
        const text = await r.body.text();
        const ms = performance.now() - t0;
        if (r.statusCode !== 200) {
          figures.add({ outcome: r.statusCode === 500 ? 'lost' : 'refused', status: r.statusCode, ms, why: text.slice(0, 120) });
          continue;
        }
        const wrong = !q.check(JSON.parse(text) as Record<string, unknown>);
        figures.add({ outcome: 'answered', status: 200, ms, ...(wrong ? { wrong } : {}) }, wrong ? `${q.path} ${text.slice(0, 200)}` : '');
        latencies.push(ms);
      } catch (err) {
        figures.add({ outcome: 'lost', status: 0, ms: performance.now() - t0, why: (err as Error).message });
      }
    }
  };
  const workers = Array.from({ length: clients }, worker);
  return {
    latencies,
    async stop() {
      stopped = true;
      await Promise.all(workers);
      await pool.close();
    },
  };
}
