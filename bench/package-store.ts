// Question (issue 26): what does a commit whose lockfile changes one package cost,
// with the org's package store (src/fetch/package-store.ts) and without it?
//   node --import tsx bench/package-store.ts [--deps 200] [--dep-kib 100] [--commits 4]
// A flat lockfile of --deps generated packages (about --dep-kib KiB each unpacked)
// from test/helpers/npm-registry.ts on 127.0.0.1; commit 1 fetches them all, each
// later commit (another sha of the same repo) swaps one package for a new one. The
// same commits run twice in one process, through the real RootStore, FetchManager and
// FETCH jail: once with the store, once without (each with its own data dir). Per
// commit: tarballs asked of the registry, the disk it added (du -sB1 over the data
// dir's roots/ and fetch-store/, hard links once), the org's charge, the fetch's
// seconds. Counts and bytes do not depend on load; seconds do (load printed beside).
import { createHash } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
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
import { startNpmRegistry } from '../test/helpers/npm-registry.js';
import { jailUidEnv } from '../test/helpers/uids.js';
import { duBytes } from '../test/helpers/du.js';
import { tarOfFiles } from './monorepo-tree.js';

const args = process.argv.slice(2);
const num = (name: string, def: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const DEPS = num('--deps', 200);
const DEP_KIB = num('--dep-kib', 100);
const COMMITS = Math.max(2, num('--commits', 4));
const MiB = 1024 * 1024;
const mib = (n: number) => (n / MiB).toFixed(1);
const load1 = () => loadavg()[0]!.toFixed(1);
const name = (i: number) => `pkg-${String(i).padStart(4, '0')}`;

const why = cannotJail();
if (why) {
  console.error(`cannot run: ${why}`);
  process.exit(1);
}
if (process.getuid?.() !== 0) {
  console.error('cannot run: the package store runs only when lspd runs as root');
  process.exit(1);
}

const pkgDir = mkdtempSync(join(tmpdir(), 'lspd-bench-store-registry-'));
const entries: Record<string, string>[] = [];
const total = DEPS + COMMITS;
const lines = Math.max(1, Math.round((DEP_KIB * 1024) / 4 / 67));
for (let i = 0; i < total; i++) {
  const files = new Map<string, string>();
  files.set('package/package.json', JSON.stringify({ name: name(i), version: '1.0.0', main: 'index.js' }, null, 2) + '\n');
  files.set('package/index.js', `exports.f${i} = (x) => x + ${i};\n`);
  for (let f = 0; f < 4; f++) {
    let h = `${i}/${f}`;
    const body: string[] = [];
    for (let l = 0; l < lines; l++) body.push(`  // ${(h = createHash('sha256').update(h).digest('hex'))}`);
    files.set(`package/lib/part${f}.js`, `module.exports = function () {\n${body.join('\n')}\n};\n`);
  }
  const tgz = gzipSync(await tarOfFiles(files));
  writeFileSync(join(pkgDir, `${name(i)}-1.0.0.tgz`), tgz);
  entries.push({
    version: '1.0.0',
    resolved: `https://registry.npmjs.org/${name(i)}/-/${name(i)}-1.0.0.tgz`,
    integrity: 'sha512-' + createHash('sha512').update(tgz).digest('base64'),
  });
}
/** Commit c (1-based): packages 0..DEPS-1, with the first c-1 swapped for DEPS.. (one more each commit). */
const treeOf = async (c: number) => {
  const ids = Array.from({ length: DEPS }, (_, i) => (i < c - 1 ? DEPS + i : i));
  const manifest = { name: 'app', version: '1.0.0', dependencies: Object.fromEntries(ids.map((i) => [name(i), '1.0.0'])) };
  const lock = {
    name: 'app',
    version: '1.0.0',
    lockfileVersion: 3,
    requires: true,
    packages: { '': manifest, ...Object.fromEntries(ids.map((i) => [`node_modules/${name(i)}`, entries[i]!])) },
  };
  return tarOfFiles(
    new Map([
      ['package.json', JSON.stringify(manifest, null, 2) + '\n'],
      ['package-lock.json', JSON.stringify(lock, null, 2) + '\n'],
    ]),
  );
};

const registry = await startNpmRegistry(pkgDir);
const log = createLogger('silent');
type Row = { tarballs: number; addedBytes: number; charged: number; seconds: number; load: string };
const run = async (withStore: boolean): Promise<Row[]> => {
  const dataDir = mkdtempSync(join(tmpdir(), `lspd-bench-store-${withStore ? 'on' : 'off'}-`));
  chmodSync(dataDir, 0o755);
  const config = loadConfig(
    { LSPD_DATA: dataDir, LOG_LEVEL: 'silent', LSPD_NPM_REGISTRY: registry.url, LSPD_FETCH_REGISTRIES: registry.authority, ...jailUidEnv(32) },
    projectDir,
  );
  const metrics = createMetrics();
  const packages = withStore ? await PackageStore.open({ dir: join(dataDir, 'fetch-store'), log, metrics }) : undefined;
  const store = await RootStore.open({ config, log, metrics, ...(packages ? { packages } : {}) });
  const jail = await createJail({ config, log });
  await jail.canary();
  const fetcher = new FetchManager({ config, log, metrics, jail, store, tools: await detectToolchains(), ...(packages ? { packages } : {}) });
  const du = () => duBytes(join(dataDir, 'roots'), join(dataDir, 'fetch-store'));
  const rows: Row[] = [];
  try {
    for (let c = 1; c <= COMMITS; c++) {
      const key = { org: 'bench', repo: 'app', sha: createHash('sha1').update(`commit ${c}`).digest('hex') };
      const hits = registry.hits.length;
      const before = du();
      const t0 = performance.now();
      await store.put(key, Readable.from([await treeOf(c)]), { gzip: false });
      await fetcher.enqueue(key);
      const view = await fetcher.wait(key);
      const seconds = (performance.now() - t0) / 1000;
      if (view.state !== 'done') throw new Error(`commit ${c}: fetch ${view.state}: ${view.log}`);
      await store.refreshUsage(key);
      const charged = (await metrics.orgDiskBytes.get()).values.find((v) => v.labels.org === 'bench')?.value ?? 0;
      rows.push({ tarballs: registry.hits.slice(hits).filter((h) => h.endsWith('.tgz')).length, addedBytes: du() - before, charged, seconds, load: load1() });
    }
  } finally {
    await fetcher.close();
    await store.close();
    await jail.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
  return rows;
};

const on = await run(true);
const off = await run(false);
await registry.close();
rmSync(pkgDir, { recursive: true, force: true });
console.log(`bench/package-store: ${DEPS} packages of ~${DEP_KIB} KiB, ${COMMITS} commits, each after the first changing one package`);
console.log('commit | store: tarballs, disk added MiB, org charged MiB, fetch s | no store: tarballs, disk added MiB, org charged MiB, fetch s | load1');
for (let c = 0; c < COMMITS; c++) {
  const a = on[c]!;
  const b = off[c]!;
  console.log(
    `${c + 1} | ${a.tarballs}, ${mib(a.addedBytes)}, ${mib(a.charged)}, ${a.seconds.toFixed(1)} | ${b.tarballs}, ${mib(b.addedBytes)}, ${mib(b.charged)}, ${b.seconds.toFixed(1)} | ${a.load} / ${b.load}`,
  );
}
const later = (rows: Row[]) => rows.slice(1).reduce((n, r) => n + r.addedBytes, 0) / (COMMITS - 1);
console.log(
  `disk per later commit: store ${mib(later(on))} MiB, no store ${mib(later(off))} MiB (${((100 * later(on)) / Math.max(1, later(off))).toFixed(0)}%); commit 1: ${mib(on[0]!.addedBytes)} / ${mib(off[0]!.addedBytes)} MiB`,
);
