// Question: what does a jail cost at start? Jailed (SERVE, through Jail.spawn: uid,
// cgroups, gate, bwrap, filter, setup confirmation) vs bare (child_process.spawn) start
// of `true` and of `node -e 0`, side by side in one run: median of N, and the ratio.
//   node --import tsx bench/jail-spawn.ts [N]
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { createJail } from '../src/jail/jail.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { createMetrics } from '../src/metrics.js';
import { rmSync } from 'node:fs';
import { jailUidEnv } from '../test/helpers/uids.js';
import { projectDir, tempDir } from '../test/helpers/daemon.js';

const N = Number(process.argv[2] ?? 20);
const dataDir = tempDir('lspd-bench-', 0o755);
const config = loadConfig({ LSPD_DATA: dataDir, ...jailUidEnv(16) }, projectDir);

const t0 = performance.now();
const jail = await createJail({ config, log: createLogger('silent'), metrics: createMetrics() });
const tBuilt = performance.now();
const verdicts = await jail.canary();
const tCanary = performance.now();
if (!verdicts.serve.ok || !verdicts.fetch.ok) throw new Error(`canary failed: ${JSON.stringify(verdicts)}`);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function bare(argv: string[]): Promise<number> {
  const s = performance.now();
  await new Promise<void>((res, rej) => {
    const c = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore', env: {} });
    c.on('exit', (code) => (code === 0 ? res() : rej(new Error(`exit ${code}`))));
  });
  return performance.now() - s;
}

async function jailed(argv: string[]): Promise<number> {
  const s = performance.now();
  const j = await jail.spawn({ phase: 'serve', argv });
  j.stdin.end();
  j.stdout.resume();
  const e = await j.exited;
  if (e.code !== 0) throw new Error(`jailed exit ${e.code}: ${j.stderrTail()}`);
  return performance.now() - s;
}

const rows: [string, number, number][] = [];
for (const [name, argv] of [
  ['true', ['/usr/bin/true']],
  ['node -e 0', ['/usr/bin/node', '-e', '0']],
] as const) {
  const b: number[] = [];
  const j: number[] = [];
  await bare([...argv]);
  await jailed([...argv]); // warm both
  for (let i = 0; i < N; i++) {
    // Interleaved, so drift on the machine hits both columns alike.
    b.push(await bare([...argv]));
    j.push(await jailed([...argv]));
  }
  rows.push([name, median(b), median(j)]);
}
await jail.close();
rmSync(dataDir, { recursive: true, force: true });

console.log(`jail start cost, median of ${N} (ms)`);
console.log('command       bare    jailed   ratio');
for (const [name, b, j] of rows) console.log(`${name.padEnd(12)} ${b.toFixed(2).padStart(6)} ${j.toFixed(2).padStart(8)} ${(j / b).toFixed(1).padStart(6)}x`);
console.log(`boot: filters + cgroups + proxy ${(tBuilt - t0).toFixed(0)} ms, canary (both phases, in parallel) ${(tCanary - tBuilt).toFixed(0)} ms`);
