// The run both package-store benches make (bench/package-store.ts for npm,
// bench/package-store-go.ts for Go): commits 1..n of one repo, each stored and fetched
// through the real RootStore, FetchManager and FETCH jail, with the org's package
// store or without it, in a data dir of its own removed after. Per commit: the
// fetch's seconds (upload to done), the disk it added (du -sB1 over roots/ and
// fetch-store/, hard links once), the org's charge, and what the bench measures itself
// around it (`snapshot` before, `measure` after).
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { loadConfig } from '../src/config.js';
import { FetchManager } from '../src/fetch/fetch-manager.js';
import { PackageStore } from '../src/fetch/package-store.js';
import { detectToolchains } from '../src/fetch/toolchains.js';
import { createJail } from '../src/jail/jail.js';
import { createLogger } from '../src/log.js';
import { createMetrics } from '../src/metrics.js';
import { RootStore } from '../src/store/store.js';
import type { RootKey } from '../src/store/types.js';
import { projectDir } from '../test/helpers/daemon.js';
import { duBytes } from '../test/helpers/du.js';
import { cannotJail } from '../test/helpers/host.js';
import { jailUidEnv } from '../test/helpers/uids.js';

/** The number after `--name` on the command line, or `def`. */
export const num = (name: string, def: number): number => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : def;
};
export const mib = (n: number): string => (n / (1024 * 1024)).toFixed(1);

/** What every commit reports, beside the bench's own figures. */
export interface CommitFigures {
  seconds: number;
  addedBytes: number;
  charged: number;
  load: string;
}

export interface CommitRun<S, R> {
  withStore: boolean;
  /** LSPD_* settings beside the data dir (the registry or proxy, the allowlist). */
  settings: Record<string, string>;
  commits: number;
  /** The tar of commit c (1-based). */
  treeOf(c: number): Promise<Buffer>;
  snapshot(dataDir: string): S;
  measure(before: S, key: RootKey, depsDir: string, dataDir: string): R;
}

/** One line per commit: `cells` of the run with the store, then without, then the load beside each. */
export function printCommits<R extends CommitFigures>(on: R[], off: R[], cells: (r: R) => string): void {
  for (const [c, a] of on.entries()) {
    const b = off[c]!;
    console.log(`${c + 1} | ${cells(a)} | ${cells(b)} | ${a.load} / ${b.load}`);
  }
}

/** Exit saying why when the host cannot run the store (no jail, not root). */
export function refuseUnlessStoreRuns(): void {
  const why = cannotJail() ?? (process.getuid?.() !== 0 ? 'the package store runs only when lspd runs as root' : undefined);
  if (why) {
    console.error(`cannot run: ${why}`);
    process.exit(1);
  }
}

export async function runCommits<S, R>(o: CommitRun<S, R>): Promise<(R & CommitFigures)[]> {
  const log = createLogger('silent');
  const dataDir = mkdtempSync(join(tmpdir(), `lspd-bench-store-${o.withStore ? 'on' : 'off'}-`));
  chmodSync(dataDir, 0o755);
  const config = loadConfig({ LSPD_DATA: dataDir, LOG_LEVEL: 'silent', ...o.settings, ...jailUidEnv(32) }, projectDir);
  const metrics = createMetrics();
  const packages = o.withStore ? await PackageStore.open({ dir: join(dataDir, 'fetch-store'), log, metrics }) : undefined;
  const store = await RootStore.open({ config, log, metrics, ...(packages ? { packages } : {}) });
  const jail = await createJail({ config, log });
  await jail.canary();
  const fetcher = new FetchManager({ config, log, metrics, jail, store, tools: await detectToolchains(), ...(packages ? { packages } : {}) });
  const du = () => duBytes(join(dataDir, 'roots'), join(dataDir, 'fetch-store'));
  const rows: (R & CommitFigures)[] = [];
  try {
    for (let c = 1; c <= o.commits; c++) {
      const key = { org: 'bench', repo: 'app', sha: createHash('sha1').update(`commit ${c}`).digest('hex') };
      const before = o.snapshot(dataDir);
      const disk = du();
      const t0 = performance.now();
      await store.put(key, Readable.from([await o.treeOf(c)]), { gzip: false });
      await fetcher.enqueue(key);
      const view = await fetcher.wait(key);
      const seconds = (performance.now() - t0) / 1000;
      if (view.state !== 'done') throw new Error(`commit ${c}: fetch ${view.state}: ${view.log}`);
      await store.refreshUsage(key);
      const charged = (await metrics.orgDiskBytes.get()).values.find((v) => v.labels.org === 'bench')?.value ?? 0;
      const load = loadavg()[0]!.toFixed(1);
      rows.push({ ...o.measure(before, key, store.depsDir(key), dataDir), seconds, addedBytes: du() - disk, charged, load });
    }
  } finally {
    await fetcher.close();
    await store.close();
    await jail.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
}
