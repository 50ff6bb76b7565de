// Question (issue 26): on a real repository, what does the org's package store
// (src/fetch/package-store.ts: npm tarballs, wheels, composer dists, Go modules) save a second
// root whose locks are the first's?
//   node --import tsx bench/store-real-tree.ts --git <git dir> [--rev HEAD] [--roots 2] [--log-level debug]
// (--log-level: the daemon's log on stderr, to see where a fetch's own time goes)
// `git archive` of --rev is stored as --roots roots of one org, each in a repo of its
// own (so reuse by workspace, which needs the same repo, is not what shares), and
// fetched in turn through the real RootStore, FetchManager and FETCH jail, from the
// public registries (the records' default hosts). The first root fetches with an
// empty store: it is what every root costs without one. Per root: fetch seconds,
// archives downloaded (store misses) and given (store hits) per ecosystem, the
// host's bytes received (/proc/net/dev, every interface but lo: other work on the
// host counts too), the disk it added (du -sB1 over roots/ and fetch-store/, hard
// links once). Seconds depend on load and the network (load printed beside).
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import pino from 'pino';
import { join } from 'node:path';
import { loadConfig } from '../src/config.js';
import { FetchManager } from '../src/fetch/fetch-manager.js';
import { PackageStore } from '../src/fetch/package-store.js';
import { detectToolchains } from '../src/fetch/toolchains.js';
import { createJail } from '../src/jail/jail.js';
import { createLogger } from '../src/log.js';
import { createMetrics } from '../src/metrics.js';
import { RootStore } from '../src/store/store.js';
import { projectDir } from '../test/helpers/daemon.js';
import { cannotJail } from '../test/helpers/host.js';
import { jailUidEnv } from '../test/helpers/uids.js';
import { duBytes } from '../test/helpers/du.js';

const args = process.argv.slice(2);
const opt = (name: string, def: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1]! : def;
};
const GIT = opt('--git', '');
const REV = opt('--rev', 'HEAD');
const ROOTS = Math.max(2, Number(opt('--roots', '2')));
const MiB = 1024 * 1024;
const mib = (n: number) => (n / MiB).toFixed(1);
const load1 = () => loadavg()[0]!.toFixed(1);
const KINDS = ['npm', 'python', 'composer', 'go'];

const why = !GIT ? 'give --git <dir>' : (cannotJail() ?? (process.getuid?.() !== 0 ? 'the package store runs only when lspd runs as root' : undefined));
if (why) {
  console.error(`cannot run: ${why}`);
  process.exit(1);
}

/** Bytes received on every interface but lo. */
const received = () =>
  readFileSync('/proc/net/dev', 'utf8')
    .split('\n')
    .slice(2)
    .map((l) => l.trim().split(/[:\s]+/))
    .filter((f) => f[0] && f[0] !== 'lo')
    .reduce((n, f) => n + Number(f[1] ?? 0), 0);

const dataDir = mkdtempSync(join(tmpdir(), 'lspd-bench-store-tree-'));
chmodSync(dataDir, 0o755);
const config = loadConfig({ LSPD_DATA: dataDir, LOG_LEVEL: 'silent', ...jailUidEnv(32) }, projectDir);
const log = createLogger(opt('--log-level', 'silent'), pino.destination(2));
const metrics = createMetrics();
const packages = await PackageStore.open({ dir: join(dataDir, 'fetch-store'), log, metrics });
const store = await RootStore.open({ config, log, metrics, packages });
const jail = await createJail({ config, log });
await jail.canary();
const fetcher = new FetchManager({ config, log, metrics, jail, store, tools: await detectToolchains(), packages });
const du = () => duBytes(join(dataDir, 'roots'), join(dataDir, 'fetch-store'));
const counts = async (m: typeof metrics.fetchStoreHits) => {
  const values = (await m.get()).values;
  return Object.fromEntries(KINDS.map((k) => [k, values.find((v) => v.labels.ecosystem === k)?.value ?? 0]));
};
/** Seconds the job's steps took, by ecosystem (lspd_fetch_seconds' sums): the rest of a fetch is the daemon's own work (seal, dedupe, store). */
const stepSeconds = async () => {
  const out: Record<string, number> = {};
  for (const v of (await metrics.fetchSeconds.get()).values) {
    if (v.metricName?.endsWith('_sum')) out[String(v.labels.ecosystem)] = (out[String(v.labels.ecosystem)] ?? 0) + v.value;
  }
  return out;
};
const rev = execFileSync('git', ['--git-dir', GIT, 'rev-parse', REV], { encoding: 'utf8' }).trim();
console.log(`bench/store-real-tree: ${GIT} at ${rev.slice(0, 12)}, ${ROOTS} roots of one org (a repo each)`);
console.log('root | fetch s (steps by ecosystem) | downloaded (store misses) | given by the store (hits) | received MiB | disk added MiB | state | load1');
try {
  for (let r = 1; r <= ROOTS; r++) {
    const key = { org: 'bench', repo: `tree${r}`, sha: rev };
    const git = spawn('git', ['--git-dir', GIT, 'archive', '--format=tar', rev], { stdio: ['ignore', 'pipe', 'inherit'] });
    await store.put(key, git.stdout, { gzip: false });
    const [h0, m0, rx0, du0, s0] = [await counts(metrics.fetchStoreHits), await counts(metrics.fetchStoreMisses), received(), du(), await stepSeconds()];
    const t0 = performance.now();
    await fetcher.enqueue(key);
    const view = await fetcher.wait(key);
    const seconds = (performance.now() - t0) / 1000;
    await store.refreshUsage(key);
    const [h1, m1, s1] = [await counts(metrics.fetchStoreHits), await counts(metrics.fetchStoreMisses), await stepSeconds()];
    const steps = Object.keys(s1)
      .map((k) => `${k} ${(s1[k]! - (s0[k] ?? 0)).toFixed(1)}`)
      .join(', ');
    const per = (a: Record<string, number>, b: Record<string, number>) =>
      KINDS.filter((k) => a[k]! - b[k]! > 0)
        .map((k) => `${k} ${a[k]! - b[k]!}`)
        .join(', ') || '0';
    console.log(
      `${r} | ${seconds.toFixed(1)} (${steps}) | ${per(m1, m0)} | ${per(h1, h0)} | ${mib(received() - rx0)} | ${mib(du() - du0)} | ${view.state} ${(view.ecosystems ?? []).map((s) => `${s.ecosystem}:${s.dir || '.'}:${s.state}`).join(' ')} | ${load1()}`,
    );
    if (view.state !== 'done') console.log(view.log);
  }
  console.log(`the org's store: ${mib(packages.bytes('bench'))} MiB (archives and files)`);
} finally {
  await fetcher.close();
  await store.close();
  await jail.close();
  rmSync(dataDir, { recursive: true, force: true });
}
