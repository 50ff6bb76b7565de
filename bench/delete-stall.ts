// Question: while one org's large root is deleted, how long does another org's file
// read wait? Every fs call of the daemon shares libuv's four threads; the removal
// must not take them (src/store/remove-tree.ts).
//   node --import tsx bench/delete-stall.ts [rounds] [files]
// Defaults: 3 rounds, 40,000 files (100 directories of 400). One daemon. Each round:
// org A uploads the big tree and org B ts-basic; B reads a file 5 times (quiet), then
// A's root is deleted and B reads 10 times while the DELETE runs (20 ms apart).
// Printed per round: the DELETE's own time, B's slowest read quiet and during the
// delete (ms, as B's client saw them), and the load average.
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnDaemon, type Daemon } from '../test/helpers/daemon.js';
import { fixturesDir, uploadDir } from '../test/helpers/lsp-harness.js';
import { jailUidEnv } from '../test/helpers/uids.js';
import { getJson } from './keep-alive.js';

const ROUNDS = Number(process.argv[2] ?? 3) || 3;
const FILES = Number(process.argv[3] ?? 40_000) || 40_000;
const PER_DIR = 400;

/** Upload `dir` for `org` under a fresh sha; its root's path. */
async function put(d: Daemon, org: string, dir: string): Promise<string> {
  const root = { org, repo: 'r', sha: createHash('sha1').update(`${org} ${dir} ${Date.now()}`).digest('hex') };
  await uploadDir(d.url, root, dir, '?warm=false');
  return `/v1/roots/${root.org}/${root.repo}/${root.sha}`;
}

async function read(d: Daemon, root: string, end: number): Promise<number> {
  const t = performance.now();
  const r = await getJson(d.url, `${root}/files/src/greet.ts?start=1&end=${end}`);
  if (r.status !== 200) throw new Error(`file read answered ${r.status}: ${JSON.stringify(r.body)}`);
  return performance.now() - t;
}

async function main(): Promise<void> {
  const big = mkdtempSync(join(tmpdir(), 'lspd-bench-big-'));
  for (let i = 0; i < FILES; i++) {
    const dir = join(big, `d${Math.floor(i / PER_DIR)}`);
    if (i % PER_DIR === 0) mkdirSync(dir);
    writeFileSync(join(dir, `f${i % PER_DIR}.txt`), 'x');
  }
  const d = await spawnDaemon({ env: { ...jailUidEnv(64), LSPD_MAX_TREE_FILES: String(FILES + 1000) }, timeoutMs: 60_000 });
  console.log(`bench/delete-stall: org B's file reads while org A's ${FILES}-file root is deleted (ms); load ${loadavg()[0]!.toFixed(1)} at the start`);
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const a = await put(d, 'org-a', big);
      const b = await put(d, 'org-b', join(fixturesDir, 'ts-basic'));
      const quiet: number[] = [];
      for (let i = 0; i < 5; i++) quiet.push(await read(d, b, 3));
      const t0 = performance.now();
      const deleted = fetch(`${d.url}${a}`, { method: 'DELETE' }).then((r) => {
        if (r.status !== 204) throw new Error(`DELETE answered ${r.status}`);
        return performance.now() - t0;
      });
      await new Promise((r) => setTimeout(r, 30));
      const during: number[] = [];
      for (let i = 0; i < 10; i++) {
        during.push(await read(d, b, 3 + (i % 3)));
        await new Promise((r) => setTimeout(r, 20));
      }
      const f = (xs: number[]) => Math.max(...xs).toFixed(1);
      console.log(`round ${round + 1}: DELETE ${(await deleted).toFixed(0)} ms; B's slowest read quiet ${f(quiet)}, during the DELETE ${f(during)}`);
      await fetch(`${d.url}${b}`, { method: 'DELETE' });
    }
  } finally {
    await d.stop();
    d.cleanup();
    rmSync(big, { recursive: true, force: true });
  }
  console.log(`(1-minute load average at the end: ${loadavg()[0]!.toFixed(1)} on ${cpus().length} CPUs)`);
}

await main();
