// The query load bench/load and bench/hot-profile put on a daemon: `clients` workers,
// each looping over the first four of tsCall's questions (definition, hover,
// references, documentSymbols) about warm roots of ts-basic, for `seconds`.
import { tsCall, type Root } from '../test/chaos/daemons.js';
import { Figures, Load } from '../test/chaos/harness.js';

/** tsCall's questions 0..3. */
export const TS_OPS = 4;

export function tsQueryLoad(url: string, roots: readonly Root[], clients: number, seconds: number, figures: Figures = new Figures()): Load {
  return new Load({
    url,
    next: (i) => tsCall(roots[i % roots.length]!, Math.floor(i / roots.length) % TS_OPS),
    concurrency: clients,
    maxRequests: 50_000_000,
    maxMs: seconds * 1000,
    timeoutMs: 80_000,
    figures,
  }).start();
}
