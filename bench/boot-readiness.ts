// Question: how often does a daemon start without being ready on a host that can
// run jails? Starts daemons four at a time (the canary of each proves both jail
// phases) and counts those whose /readyz says not ready, with the reasons. Any
// count above zero is a bug: a probe that exited before its spawn returned once
// lost its output to Node's flushStdio in 1 start of 100 (LLM.md, "A jail's stdout").
//
//   node --import tsx bench/boot-readiness.ts [--rounds 16]
import { spawnDaemon } from '../test/helpers/daemon.js';
import { jailUidEnv } from '../test/helpers/uids.js';

const args = process.argv.slice(2);
const i = args.indexOf('--rounds');
const rounds = i >= 0 ? Number(args[i + 1]) : 16;
const PARALLEL = 4;

async function start(k: number): Promise<string | undefined> {
  // Each daemon its own jail uids, away from the tests' ranges.
  const d = await spawnDaemon({ env: { ...jailUidEnv(64) }, timeoutMs: 60_000 });
  try {
    const r = (await (await fetch(`${d.url}/readyz`)).json()) as { ready: boolean; reason?: string };
    return r.ready ? undefined : (r.reason ?? 'not ready');
  } finally {
    await d.stop();
  }
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const reasons: string[] = [];
  for (let round = 0; round < rounds; round++) {
    const got = await Promise.all(Array.from({ length: PARALLEL }, (_, j) => start(round * PARALLEL + j)));
    for (const r of got) if (r) reasons.push(r);
  }
  console.log(`${rounds * PARALLEL} daemon starts, ${reasons.length} not ready, ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  for (const r of reasons) console.log(`  not ready: ${r}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
