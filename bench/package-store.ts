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
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { startNpmRegistry } from '../test/helpers/npm-registry.js';
import { tarOfFiles } from './monorepo-tree.js';
import { mib, num, printCommits, refuseUnlessStoreRuns, runCommits } from './store-commits.js';

const DEPS = num('--deps', 200);
const DEP_KIB = num('--dep-kib', 100);
const COMMITS = Math.max(2, num('--commits', 4));
const name = (i: number) => `pkg-${String(i).padStart(4, '0')}`;

refuseUnlessStoreRuns();

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
const run = (withStore: boolean) =>
  runCommits({
    withStore,
    settings: { LSPD_NPM_REGISTRY: registry.url, LSPD_FETCH_REGISTRIES: registry.authority },
    commits: COMMITS,
    treeOf,
    snapshot: () => registry.hits.length,
    measure: (hits) => ({ tarballs: registry.hits.slice(hits).filter((h) => h.endsWith('.tgz')).length }),
  });
type Row = Awaited<ReturnType<typeof run>>[number];

const on = await run(true);
const off = await run(false);
await registry.close();
rmSync(pkgDir, { recursive: true, force: true });
console.log(`bench/package-store: ${DEPS} packages of ~${DEP_KIB} KiB, ${COMMITS} commits, each after the first changing one package`);
console.log('commit | store: tarballs, disk added MiB, org charged MiB, fetch s | no store: tarballs, disk added MiB, org charged MiB, fetch s | load1');
printCommits(on, off, (r) => `${r.tarballs}, ${mib(r.addedBytes)}, ${mib(r.charged)}, ${r.seconds.toFixed(1)}`);
const later = (rows: Row[]) => rows.slice(1).reduce((n, r) => n + r.addedBytes, 0) / (COMMITS - 1);
console.log(
  `disk per later commit: store ${mib(later(on))} MiB, no store ${mib(later(off))} MiB (${((100 * later(on)) / Math.max(1, later(off))).toFixed(0)}%); commit 1: ${mib(on[0]!.addedBytes)} / ${mib(off[0]!.addedBytes)} MiB`,
);
