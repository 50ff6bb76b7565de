// Hostile trees against a real daemon (issue 13, "bounded work for every input
// the tree controls"): one org uploads trees built to multiply the daemon's work,
// a case per class — symlink chains, giant flag files, many tiny files, deep trees,
// huge lockfiles — and each is refused, or stored and served within its bounds,
// with a clear error or note. All along, /livez is polled and must be answered
// every time (a generous ceiling: "answered", never "fast"); after the corpus,
// another org's queries on a normal root still get the right answers, and no
// jail process of the daemon's uid range is left. Shared by hostile.test.ts
// (short) and chaos.long.ts (long: more files, deeper, larger).
import { after, afterEach, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { cannotJail, lineOf, position } from '../helpers/lsp-harness.js';
import { lacksBinaries } from '../helpers/host.js';
import { CLANGD } from '../../src/lsp/servers/rows/c.js';
import { spawnDaemon, type Daemon } from '../helpers/daemon.js';
import { packTar, type PackEntry } from '../store-helpers.js';
import { fixtureTar, fixturesDir, rootPath, shaOf, tsCall, type Root } from './daemons.js';
import { Figures, report, send, waitFor, type Call, type Result } from './harness.js';
import { MiB, jailProcs, rssBytes } from './procs.js';
import type { UidRange } from '../helpers/uids.js';
import { shapeCases, type ShapeSizes } from './hostile-shape-cases.js';
import { jailUids } from '../helpers/uids.js';

export interface HostileSuiteOptions {
  label: string;
  /** Tiny files in the many-files tree. */
  tinyFiles: number;
  /** Directories above the deep tree's file (at most ~1500: names are bounded at 3 KiB). */
  depth: number;
  /** Links in the memo-defeating symlink tar (refused past its step budget). */
  bumpLinks: number;
  /** Sizes of issue 30's five shapes (hostile-shape-cases.ts). */
  shapes: ShapeSizes;
}

/** Jail uids of this suite: the helper's fixed range (300000-309999), apart from store-hostile's. */
const UIDS: UidRange = jailUids(64);
/** The generated compile database's bound for this daemon: small, so the cut is quick to reach. */
const CDB_BYTES = 1 * MiB;

/** How long this daemon lets an upload's body stall before cutting it (a stalled layer waits this long). */
const STALL_CUT_MS = 5_000;

/** c-basic's files, for trees built around it. */
function cBasic(): PackEntry[] {
  return ['src/main.c', 'src/greet.c', 'include/greet.h'].map((p) => ({ name: p, data: readFileSync(join(fixturesDir, 'c-basic', p)) }));
}

/** Chained links (each climbing `depth` names and back, then naming the previous one); `bump` walks through the next link's directory first. */
function symlinkChain(n: number, depth: number, bump: boolean): PackEntry[] {
  const out: PackEntry[] = [{ name: 'f', data: 'x' }];
  for (let i = 0; i < n; i++) {
    out.push({
      name: `d${i}/l`,
      type: 'symlink',
      linkname: `${bump ? `../d${i + 1}/../` : '../'}${'x/'.repeat(depth)}${'../'.repeat(depth)}${i % 40 === 0 ? 'f' : `d${i - 1}/l`}`,
    });
  }
  return out;
}

export function hostileSuite(o: HostileSuiteOptions): void {
  const clangd = lacksBinaries('clangd', CLANGD);
  describe(`chaos: hostile trees (${o.label})`, { skip: cannotJail() }, () => {
    let d: Daemon;
    let good: Root;
    const f = new Figures();
    // /livez, polled for the whole suite.
    let polling = true;
    let polls = 0;
    let unanswered = 0;
    let slowestMs = 0;
    /** The slowest /livez answer while each case ran (a figure, not an assertion). */
    let caseSlowestMs = 0;
    const slowestByCase: Record<string, number> = {};
    let watcher: Promise<void> | undefined;
    let rssStart = 0;

    const put = async (key: Root, tar: Buffer, label: string): Promise<Result> => {
      const r = await send(
        d.url,
        { method: 'PUT', path: rootPath(key), raw: gzipSync(tar), headers: { 'content-type': 'application/gzip' } },
        { timeoutMs: 300_000 },
      );
      f.add(r, label);
      return r;
    };
    const ask = async (call: Call, label: string): Promise<Result> => {
      const r = await send(d.url, call, { timeoutMs: 120_000 });
      f.add(r, label);
      return r;
    };
    const evil = (n: string): Root => ({ org: 'evil', repo: 'hostile', sha: shaOf(`hostile-${o.label}-${n}`) });

    before(async () => {
      d = await spawnDaemon({
        env: {
          LSPD_JAIL_UID_BASE: String(UIDS.base),
          LSPD_JAIL_UID_COUNT: String(UIDS.count),
          LSPD_RESULT_CACHE_ENTRIES: '0',
          LSPD_MAX_COMPILE_DB_BYTES: String(CDB_BYTES),
          LSPD_UPLOAD_READ_TIMEOUT_MS: String(STALL_CUT_MS),
        },
        timeoutMs: 60_000,
      });
      const ready = (await (await fetch(`${d.url}/readyz`)).json()) as { ready: boolean; reason?: string };
      assert.equal(ready.ready, true, `the daemon must be ready: ${ready.reason}`);
      good = { org: 'good', repo: 'ts', sha: shaOf(`hostile-good-${o.label}`) };
      assert.equal((await put(good, await fixtureTar('ts-basic'), 'good upload')).status, 201);
      rssStart = rssBytes(d.child.pid!);
      watcher = (async () => {
        while (polling) {
          const t0 = performance.now();
          const r = await fetch(`${d.url}/livez`, { signal: AbortSignal.timeout(30_000) }).catch(() => undefined);
          polls++;
          if (r?.status !== 200) unanswered++;
          await r?.arrayBuffer();
          slowestMs = Math.max(slowestMs, performance.now() - t0);
          caseSlowestMs = Math.max(caseSlowestMs, performance.now() - t0);
          await new Promise((res) => setTimeout(res, 25));
        }
      })();
    });

    beforeEach(() => {
      caseSlowestMs = 0;
    });
    afterEach((t) => {
      slowestByCase[t.name.split(':')[0]!] = Math.round(caseSlowestMs);
    });

    after(async () => {
      polling = false;
      await watcher;
      if (d) {
        if (d.child.exitCode === null) await d.stop();
        assert.ok(await waitFor(() => jailProcs(UIDS).length === 0, 10_000), 'no jail process left');
        d.cleanup();
      }
    });

    test('symlink chains: the 1 KB chain is stored in bounded steps; a memo-defeating one is refused past its budget', async () => {
      const chain = await packTar(symlinkChain(40, 500, false));
      const stored = await put(evil('chain'), chain, 'symlink chain');
      assert.equal(stored.status, 201, JSON.stringify(stored.body));
      const line = d.logs.find((l) => l.msg === 'root stored' && String(l.root).includes(evil('chain').sha));
      assert.ok(line && Number(line.resolveSteps) <= 2 * chain.length, `resolution steps ${line?.resolveSteps} for ${chain.length} tar bytes`);
      const bump = await put(evil('bump'), await packTar(symlinkChain(o.bumpLinks, 500, true)), 'memo-defeating chain');
      assert.equal(bump.status, 422, JSON.stringify(bump.body));
      assert.equal(bump.body?.error, 'unsafe_entry');
      assert.match(String(bump.body?.reason), /too many steps/);
    });

    test(
      'giant flag files: a compile_flags.txt over its bound is not used, a database is cut at its bound; both said, answers right',
      { skip: clangd },
      async () => {
        const callAt = position('c-basic', 'src/main.c', 'greet(buf, sizeof buf, "world")');
        const want = `src/greet.c:${lineOf('c-basic', 'src/greet.c', 'int greet(')}`;
        const def = (key: Root): Call => ({ method: 'POST', path: '/v1/code/lsp', json: { ...key, op: 'definition', path: 'src/main.c', ...callAt } });
        const at = (b?: Record<string, unknown>) =>
          ((b?.locations ?? []) as { path: string; range: { start: { line: number } } }[]).map((l) => `${l.path}:${l.range.start.line}`);

        // 1 MiB of flags: refused for the fallback flags (the workspace's include/ among them).
        const huge = [...cBasic(), { name: 'compile_flags.txt', data: Array.from({ length: 120_000 }, (_, i) => `-DF${i}`).join('\n') }];
        assert.equal((await put(evil('flags'), await packTar(huge), 'giant compile_flags.txt')).status, 201);
        const a = await ask(def(evil('flags')), 'definition, giant flags');
        assert.equal(a.status, 200, JSON.stringify(a.body));
        assert.deepEqual(at(a.body), [want]);
        assert.match(String(a.body?.notes), /compile_flags\.txt \(\d+ [KM]iB\) is over the 64 KiB bound: not used/);

        // 60 KiB of flags and hundreds of sources: the database stops at its bound (the
        // workspace's own sources come first, breadth first), and says after how many.
        const flags = ['-Iinclude', ...Array.from({ length: 2400 }, (_, i) => `-DFLAG_${i}=1`)].join('\n');
        const many = [
          ...cBasic(),
          { name: 'compile_flags.txt', data: flags },
          ...Array.from({ length: 300 }, (_, i) => ({ name: `zz/f${i}.c`, data: `int f${i};\n` })),
        ];
        assert.equal((await put(evil('cdb'), await packTar(many), 'many sources x large flags')).status, 201);
        const b = await ask(def(evil('cdb')), 'definition, cut database');
        assert.equal(b.status, 200, JSON.stringify(b.body));
        assert.deepEqual(at(b.body), [want]);
        assert.match(String(b.body?.notes), /generated compile database stopped at the 1 MiB bound after \d+ sources/);
      },
    );

    test('many tiny files: stored whole; a name scan over them is bounded and answers 404 symbol_not_found', async () => {
      const key = evil('tiny');
      const entries: PackEntry[] = [{ name: 'src/app.ts', data: 'export const app = 1;\n' }];
      for (let i = 0; i < o.tinyFiles; i++) entries.push({ name: `m/${String(i % 100).padStart(2, '0')}/f${i}.ts`, data: `export const v${i} = ${i};\n` });
      const r = await put(key, await packTar(entries), 'many tiny files');
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(r.body?.files, o.tinyFiles + 1);
      const miss = await ask({ method: 'POST', path: '/ask', json: { ...key, symbol: 'no_such_name_anywhere_here' } }, 'ask over many files');
      assert.equal(miss.status, 404, JSON.stringify(miss.body));
      assert.equal(miss.body?.error, 'symbol_not_found');
    });

    test('deep trees: a file hundreds of directories down is served; a name past the path bound is refused 422', async () => {
      const key = evil('deep');
      // One-letter names: 1200 levels is 2400 bytes, inside the 3 KiB path bound.
      const dir = Array.from({ length: o.depth }, () => 'd').join('/');
      const r = await put(key, await packTar([{ name: `${dir}/deep.ts`, data: 'export function deepest(): number {\n  return 1;\n}\n' }]), 'deep tree');
      assert.equal(r.status, 201, JSON.stringify(r.body));
      const syms = await ask({ method: 'POST', path: '/v1/code/lsp', json: { ...key, op: 'documentSymbols', path: `${dir}/deep.ts` } }, 'symbols at depth');
      assert.equal(syms.status, 200, JSON.stringify(syms.body));
      assert.ok(
        (syms.body?.symbols as { name: string }[]).some((s) => s.name === 'deepest'),
        JSON.stringify(syms.body),
      );
      const tooDeep = Array.from({ length: 1600 }, () => 'd').join('/');
      const refused = await put(evil('too-deep'), await packTar([{ name: `${tooDeep}/x.ts`, data: 'x' }]), 'path past the bound');
      assert.equal(refused.status, 422, JSON.stringify(refused.body));
      assert.equal(refused.body?.error, 'unsafe_entry');
      assert.equal(refused.body?.reason, 'name too long');
    });

    test('huge lockfiles: stored, and the fetch refused unparsed, saying which file and how large', async () => {
      const tools = existsSync('/usr/bin/npm') && existsSync('/usr/bin/node');
      const lock = '{"lockfileVersion":3,"packages":{"":{},' + '"node_modules/pad":{"version":"1.0.0"},'.repeat(900_000) + '"node_modules/z":{}}}';
      const r = await put(
        evil('lock'),
        await packTar([
          { name: 'package.json', data: '{"dependencies":{"pad":"1.0.0"}}' },
          { name: 'package-lock.json', data: lock },
          { name: 'index.ts', data: 'export {};\n' },
        ]),
        'huge lockfile',
      );
      assert.equal(r.status, 201, JSON.stringify(r.body));
      const fetchView = r.body?.fetch as { state: string; error?: string };
      assert.equal(fetchView.state, 'refused', JSON.stringify(fetchView));
      if (tools)
        assert.match(
          String(fetchView.error),
          /package-lock\.json is \d+ MiB, over the 32 MiB bound for a lockfile or manifest: not parsed, dependencies not fetched/,
        );
    });

    shapeCases({ label: o.label, daemon: () => d, good: () => good, figures: f, stallCutMs: STALL_CUT_MS }, o.shapes);

    test('the daemon stayed responsive and another org is still answered right', async (t) => {
      for (let i = 0; i < 5; i++) {
        const r = await ask(tsCall(good, i), `good org question ${i}`);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.wrong, undefined, JSON.stringify(r.body));
      }
      polling = false;
      await watcher;
      const rssEnd = rssBytes(d.child.pid!);
      f.fault(
        'hostile trees',
        unanswered === 0,
        `/livez ${polls - unanswered}/${polls} answered, slowest ${Math.round(slowestMs)} ms; daemon RSS ${Math.round(rssStart / MiB)} -> ${Math.round(rssEnd / MiB)} MiB`,
      );
      report(t, `hostile ${o.label}`, f);
      t.diagnostic(`slowest /livez per case (ms): ${JSON.stringify(slowestByCase)}`);
      assert.equal(unanswered, 0, `${unanswered} of ${polls} /livez polls unanswered`);
      assert.ok(polls > 0);
      assert.equal(f.lost, 0, f.lostWhy.join('\n'));
      assert.equal(f.wrong, 0, f.wrongWhy.join('\n'));
    });
  });
}
