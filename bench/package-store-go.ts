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
// --real DIR,DIR: git checkouts of real Go modules (their HEAD, requirements dropped,
// nested modules and vendor/ left out, a package `lspdbench` added for main to import:
// their other packages' imports are never loaded) required by every commit beside the
// generated ones, so the store holds real modules' sizes and file counts.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, lstatSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeGoProxy } from '../test/helpers/go-proxy.js';
import { tarOfFiles } from './monorepo-tree.js';
import { mib, num, printCommits, refuseUnlessStoreRuns, runCommits } from './store-commits.js';

const MODS = num('--mods', 100);
const MOD_KIB = num('--mod-kib', 200);
const COMMITS = Math.max(2, num('--commits', 4));
const path = (i: number) => `example.com/bench/m${String(i).padStart(4, '0')}`;

refuseUnlessStoreRuns();

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
/** The real modules: path, version (its major, as the path says), go.sum lines, and its zip's bytes. */
const real: { path: string; version: string; sum: string }[] = [];
const realAt = process.argv.indexOf('--real');
for (const repo of realAt >= 0 ? process.argv[realAt + 1]!.split(',') : []) {
  const out = mkdtempSync(join(tmpdir(), 'lspd-bench-store-gomod-'));
  execFileSync('sh', ['-c', 'git -C "$0" archive HEAD | tar -x -C "$1"', repo, out]);
  const modPath = /^module\s+"?([^"\s]+)/m.exec(readFileSync(join(out, 'go.mod'), 'utf8'))![1]!;
  const major = Number(/[/.]v(\d+)$/.exec(modPath)?.[1] ?? 1);
  const files: Record<string, Buffer | string> = {};
  const walk = (rel: string) => {
    for (const name of readdirSync(join(out, rel))) {
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(out, r));
      if (st.isDirectory() && name !== 'vendor' && !existsSync(join(out, r, 'go.mod'))) walk(r);
      else if (st.isFile()) files[r] = readFileSync(join(out, r));
    }
  };
  walk('');
  files['go.mod'] = `module ${modPath}\n\ngo 1.19\n`;
  files['lspdbench/b.go'] = 'package lspdbench\n';
  const version = `v${major}.0.0`;
  real.push({ path: modPath, version, sum: writeGoProxy(proxyDir, [{ path: modPath, version, files }], 8) });
  rmSync(out, { recursive: true, force: true });
}
/** Commit c (1-based): the real modules and generated 0..MODS-1, with the first c-1 swapped for MODS.. (one more each commit). */
const treeOf = (c: number) => {
  const ids = Array.from({ length: MODS }, (_, i) => (i < c - 1 ? MODS + i : i));
  const reqs = [
    ...real.map((r) => ({ ...r, pkg: `${r.path}/lspdbench` })),
    ...ids.map((i) => ({ path: path(i), version: 'v1.0.0', sum: sums[i]!, pkg: path(i) })),
  ];
  return tarOfFiles(
    new Map([
      ['go.mod', `module example.com/app\n\ngo 1.19\n\nrequire (\n${reqs.map((r) => `\t${r.path} ${r.version}\n`).join('')})\n`],
      ['go.sum', reqs.map((r) => r.sum).join('')],
      ['main.go', `package main\n\nimport (\n${reqs.map((r) => `\t_ "${r.pkg}"\n`).join('')})\n\nfunc main() {}\n`],
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

/** Inodes of the org's stored Go files: a zip in a root's cache that is none of them came from the proxy. */
const storeInodes = (dataDir: string) => {
  const dir = join(dataDir, 'fetch-store', 'bench', 'go');
  return new Set(existsSync(dir) ? readdirSync(dir).map((n) => statSync(join(dir, n)).ino) : []);
};
const run = (withStore: boolean) =>
  runCommits({
    withStore,
    settings: { LSPD_GO_PROXY: `file://${proxyDir}`, LSPD_FETCH_REGISTRIES: '127.0.0.1:9' },
    commits: COMMITS,
    treeOf,
    snapshot: storeInodes,
    measure: (held, _key, depsDir) => {
      const fetched = cachedZips(depsDir).filter((z) => !held.has(z.ino));
      return { zips: fetched.length, zipBytes: fetched.reduce((n, z) => n + z.size, 0) };
    },
  });
type Row = Awaited<ReturnType<typeof run>>[number];

const on = await run(true);
const off = await run(false);
rmSync(proxyDir, { recursive: true, force: true });
console.log(
  `bench/package-store-go: ${real.length ? `${real.length} real modules (${real.map((r) => r.path).join(', ')}) and ` : ''}${MODS} generated Go modules of ~${MOD_KIB} KiB source, ${COMMITS} commits, each after the first changing one module`,
);
console.log('commit | store: zips from proxy, MiB, disk added MiB, fetch s | no store: zips from proxy, MiB, disk added MiB, fetch s | load1');
printCommits(on, off, (r) => `${r.zips}, ${mib(r.zipBytes)}, ${mib(r.addedBytes)}, ${r.seconds.toFixed(1)}`);
const later = (rows: Row[], f: (r: Row) => number) => rows.slice(1).reduce((n, r) => n + f(r), 0) / (COMMITS - 1);
console.log(
  `per later commit: store ${later(on, (r) => r.zips).toFixed(0)} zips, ${mib(later(on, (r) => r.addedBytes))} MiB disk, ${later(on, (r) => r.seconds).toFixed(1)} s; ` +
    `no store ${later(off, (r) => r.zips).toFixed(0)} zips, ${mib(later(off, (r) => r.addedBytes))} MiB disk, ${later(off, (r) => r.seconds).toFixed(1)} s`,
);
