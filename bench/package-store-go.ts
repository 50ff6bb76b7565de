// Question (issue 26): what does a commit whose go.sum changes one Go module cost,
// with the org's package store (src/fetch/go-modules.ts) and without it?
//   node --import tsx bench/package-store-go.ts [--mods 100] [--mod-kib 200] [--commits 4]
// A go.mod requiring --mods generated modules (about --mod-kib KiB of Go source each,
// deflated as real proxies serve them) from a module proxy on disk (GOPROXY=file://,
// test/helpers/go-proxy.ts: this host reaches no public Go proxy); commit 1 fetches them
// all, each later commit (another sha of the same repo) swaps one module for a new one.
// The same commits run twice in one process through the real RootStore, FetchManager
// and FETCH jail running `go mod download all`: with the store, then without (each its
// own data dir). Per commit: the zips Go took from the proxy and their bytes (a zip in
// the root's module cache that is not an inode the store held before the fetch came
// from the proxy), the disk the commit added (du -sB1 over roots/ and fetch-store/, hard
// links once), the fetch's seconds. A file:// proxy has no network delay: the seconds
// show the local cost (Go's hashing and extraction, the daemon's h1), not a download's.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
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
import { projectDir } from '../test/helpers/daemon.js';
import { writeGoProxy } from '../test/helpers/go-proxy.js';
import { cannotJail } from '../test/helpers/host.js';
import { jailUidEnv } from '../test/helpers/uids.js';
import { tarOfFiles } from './monorepo-tree.js';

const args = process.argv.slice(2);
const num = (name: string, def: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const MODS = num('--mods', 100);
const MOD_KIB = num('--mod-kib', 200);
const COMMITS = Math.max(2, num('--commits', 4));
const MiB = 1024 * 1024;
const mib = (n: number) => (n / MiB).toFixed(1);
const load1 = () => loadavg()[0]!.toFixed(1);
const path = (i: number) => `example.com/bench/m${String(i).padStart(4, '0')}`;

const why = cannotJail();
if (why) {
  console.error(`cannot run: ${why}`);
  process.exit(1);
}
if (process.getuid?.() !== 0) {
  console.error('cannot run: the package store runs only when lspd runs as root');
  process.exit(1);
}

const proxyDir = mkdtempSync(join(tmpdir(), 'lspd-bench-store-goproxy-'));
chmodSync(proxyDir, 0o755);
const sums: string[] = [];
const lines = Math.max(1, Math.round((MOD_KIB * 1024) / 4 / 68));
for (let i = 0; i < MODS + COMMITS; i++) {
  const files: Record<string, string> = { 'go.mod': `module ${path(i)}\n\ngo 1.19\n`, 'm.go': `package m${i}\n\nfunc F() int { return ${i} }\n` };
  for (let f = 0; f < 4; f++) {
    let h = `${i}/${f}`;
    const body: string[] = [];
    for (let l = 0; l < lines; l++) body.push(`// ${(h = createHash('sha256').update(h).digest('hex'))}`);
    files[`part${f}.go`] = `package m${i}\n\n${body.join('\n')}\n`;
  }
  sums.push(writeGoProxy(proxyDir, [{ path: path(i), version: 'v1.0.0', files }], 8));
}
/** Commit c (1-based): modules 0..MODS-1, with the first c-1 swapped for MODS.. (one more each commit). */
const treeOf = (c: number) => {
  const ids = Array.from({ length: MODS }, (_, i) => (i < c - 1 ? MODS + i : i));
  return tarOfFiles(
    new Map([
      ['go.mod', `module example.com/app\n\ngo 1.19\n\nrequire (\n${ids.map((i) => `\t${path(i)} v1.0.0\n`).join('')})\n`],
      ['go.sum', ids.map((i) => sums[i]).join('')],
      ['main.go', `package main\n\nimport (\n${ids.map((i) => `\t_ "${path(i)}"\n`).join('')})\n\nfunc main() {}\n`],
    ]),
  );
};

/** Every .zip under a root's download cache: inode and size. */
const cachedZips = (depsDir: string) => {
  const top = join(depsDir, 'go', 'pkg', 'mod', 'cache', 'download');
  if (!existsSync(top)) return [];
  return readdirSync(top, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.zip'))
    .map((f) => statSync(join(top, f)))
    .map((st) => ({ ino: st.ino, size: st.size }));
};

const log = createLogger('silent');
type Row = { zips: number; zipBytes: number; addedBytes: number; seconds: number; load: string };
const run = async (withStore: boolean): Promise<Row[]> => {
  const dataDir = mkdtempSync(join(tmpdir(), `lspd-bench-store-go-${withStore ? 'on' : 'off'}-`));
  chmodSync(dataDir, 0o755);
  const config = loadConfig(
    { LSPD_DATA: dataDir, LOG_LEVEL: 'silent', LSPD_GO_PROXY: `file://${proxyDir}`, LSPD_FETCH_REGISTRIES: '127.0.0.1:9', ...jailUidEnv(32) },
    projectDir,
  );
  const metrics = createMetrics();
  const packages = withStore ? await PackageStore.open({ dir: join(dataDir, 'fetch-store'), log, metrics }) : undefined;
  const store = await RootStore.open({ config, log, metrics, ...(packages ? { packages } : {}) });
  const jail = await createJail({ config, log });
  await jail.canary();
  const fetcher = new FetchManager({ config, log, metrics, jail, store, tools: await detectToolchains(), ...(packages ? { packages } : {}) });
  const goStore = join(dataDir, 'fetch-store', 'bench', 'go');
  const storeInodes = () => new Set(existsSync(goStore) ? readdirSync(goStore).map((n) => statSync(join(goStore, n)).ino) : []);
  const du = () => {
    const dirs = [join(dataDir, 'roots'), join(dataDir, 'fetch-store')].filter((d) => existsSync(d));
    return Number(
      execFileSync('du', ['-sB1', '-c', ...dirs], { encoding: 'utf8' })
        .trim()
        .split('\n')
        .pop()!
        .split('\t')[0],
    );
  };
  const rows: Row[] = [];
  try {
    for (let c = 1; c <= COMMITS; c++) {
      const key = { org: 'bench', repo: 'app', sha: createHash('sha1').update(`commit ${c}`).digest('hex') };
      const held = storeInodes();
      const before = du();
      const t0 = performance.now();
      await store.put(key, Readable.from([await treeOf(c)]), { gzip: false });
      await fetcher.enqueue(key);
      const view = await fetcher.wait(key);
      const seconds = (performance.now() - t0) / 1000;
      if (view.state !== 'done') throw new Error(`commit ${c}: fetch ${view.state}: ${view.log}`);
      await store.refreshUsage(key);
      const fetched = cachedZips(store.depsDir(key)).filter((z) => !held.has(z.ino));
      rows.push({ zips: fetched.length, zipBytes: fetched.reduce((n, z) => n + z.size, 0), addedBytes: du() - before, seconds, load: load1() });
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
rmSync(proxyDir, { recursive: true, force: true });
console.log(`bench/package-store-go: ${MODS} Go modules of ~${MOD_KIB} KiB source, ${COMMITS} commits, each after the first changing one module`);
console.log('commit | store: zips from proxy, MiB, disk added MiB, fetch s | no store: zips from proxy, MiB, disk added MiB, fetch s | load1');
for (let c = 0; c < COMMITS; c++) {
  const a = on[c]!;
  const b = off[c]!;
  console.log(
    `${c + 1} | ${a.zips}, ${mib(a.zipBytes)}, ${mib(a.addedBytes)}, ${a.seconds.toFixed(1)} | ${b.zips}, ${mib(b.zipBytes)}, ${mib(b.addedBytes)}, ${b.seconds.toFixed(1)} | ${a.load} / ${b.load}`,
  );
}
const later = (rows: Row[], f: (r: Row) => number) => rows.slice(1).reduce((n, r) => n + f(r), 0) / (COMMITS - 1);
console.log(
  `per later commit: store ${later(on, (r) => r.zips).toFixed(0)} zips, ${mib(later(on, (r) => r.addedBytes))} MiB disk, ${later(on, (r) => r.seconds).toFixed(1)} s; ` +
    `no store ${later(off, (r) => r.zips).toFixed(0)} zips, ${mib(later(off, (r) => r.addedBytes))} MiB disk, ${later(off, (r) => r.seconds).toFixed(1)} s`,
);
