// What a bench prints beside its figures: the load average, medians, a table of runs.
import { loadavg } from 'node:os';

/** The 1, 5 and 15 minute load averages, as printed beside every figure. */
export const load = (): string =>
  loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');

export const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** A markdown table: each row's median and its runs, in ms. */
export function printRuns(rows: readonly [name: string, ms: readonly number[]][]): void {
  console.log('| what | median ms | runs (ms) |');
  console.log('|---|---|---|');
  for (const [name, xs] of rows) console.log(`| ${name} | ${median(xs).toFixed(1)} | ${xs.map((x) => x.toFixed(1)).join(', ')} |`);
}
