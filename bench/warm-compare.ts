// What the warm-path benches (bench/overhead, bench/overhead-real) share: the timed
// client (queries and the HTTP floor, GET /livez, over one kept-alive connection,
// under the same load), percentiles, the table's number format.
import { performance } from 'node:perf_hooks';
import { LeanConnection, get, post } from './lean-http.js';

/** An answer as the benches check it: status, parsed body, and the bytes it came in. */
export interface WarmAnswer {
  status: number;
  body: Record<string, unknown>;
  bytes: number;
}

/**
 * The timed side of a warm comparison: POST /v1/code/lsp and the HTTP floor (GET
 * /livez) over one lean keep-alive connection (bench/lean-http.ts), every answer read
 * whole and parsed, as the raw client parses the server's. node's http client cost
 * ~100 µs of the same cores per request, and it parsed lspd's answers but not the
 * floor's, which counted its own JSON work as lspd's.
 */
export class WarmClient {
  readonly #url: string;
  readonly #conn: LeanConnection;
  readonly #floor: Buffer;

  constructor(url: string) {
    this.#url = url;
    this.#conn = new LeanConnection(url);
    this.#floor = get(url, '/livez');
  }

  /** A query's request, built once to be asked many times. */
  query(json: unknown): Buffer {
    return post(this.#url, '/v1/code/lsp', JSON.stringify(json));
  }

  async ask(request: Buffer): Promise<WarmAnswer> {
    const r = await this.#conn.request(request);
    return { status: r.status, body: JSON.parse(r.body) as Record<string, unknown>, bytes: Buffer.byteLength(r.body) };
  }

  /** GET /livez over the same connection: the HTTP floor (client, socket, fastify) under the same load. */
  floor(): Promise<WarmAnswer> {
    return this.ask(this.#floor);
  }

  close(): void {
    this.#conn.close();
  }
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
