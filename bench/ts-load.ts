// The query load bench/load and bench/hot-profile put on a daemon: `clients` workers,
// each looping over the first four of tsCall's questions (definition, hover,
// references, documentSymbols) about warm roots of ts-basic, for `seconds`.
//
// The load generator shares the host's cores with the daemon and the servers, so it
// is kept lean: one keep-alive connection per client (bench/lean-http.ts), each
// question's request serialised once. Every answer is still parsed and checked.
// The chaos harness's Load cost the client 180 µs per answer and an undici Pool
// ~90–100, as much as the cached daemon itself; bench/load's CPU column says what
// this one costs in the same run.
import { tsCall, type Root } from '../test/chaos/daemons.js';
import { Figures } from '../test/chaos/harness.js';
import { LeanConnection, post } from './lean-http.js';

/** tsCall's questions 0..3. */
export const TS_OPS = 4;

export interface Question {
  path: string;
  /** The whole request as sent (lean-http.ts `post`, `get`). */
  raw: Buffer;
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
      questions.push({ path: c.path, raw: post(url, c.path, JSON.stringify(c.json)), check: c.check ?? (() => true) });
    }
  return questionLoad(url, questions, clients, seconds, figures);
}

/** `clients` workers asking `questions` in turn for `seconds`, each answer parsed and checked. */
export function questionLoad(url: string, questions: readonly Question[], clients: number, seconds: number, figures: Figures = new Figures()): QueryLoad {
  const latencies: number[] = [];
  const until = Date.now() + seconds * 1000;
  let stopped = false;
  let next = 0;
  const worker = async () => {
    const conn = new LeanConnection(url);
    try {
      while (!stopped && Date.now() < until) {
        const q = questions[next++ % questions.length]!;
        const t0 = performance.now();
        try {
          const r = await conn.request(q.raw);
          const ms = performance.now() - t0;
          if (r.status !== 200) {
            figures.add({ outcome: r.status === 500 ? 'lost' : 'refused', status: r.status, ms, why: r.body.slice(0, 120) });
            continue;
          }
          const wrong = !q.check(JSON.parse(r.body) as Record<string, unknown>);
          figures.add({ outcome: 'answered', status: 200, ms, ...(wrong ? { wrong } : {}) }, wrong ? `${q.path} ${r.body.slice(0, 200)}` : '');
          latencies.push(ms);
        } catch (err) {
          figures.add({ outcome: 'lost', status: 0, ms: performance.now() - t0, why: (err as Error).message });
        }
      }
    } finally {
      conn.close();
    }
  };
  const workers = Array.from({ length: clients }, worker);
  return {
    latencies,
    async stop() {
      stopped = true;
      await Promise.all(workers);
    },
  };
}
