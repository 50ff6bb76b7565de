// Session recycling (issue 15), in the real SERVE jail with the native TypeScript
// server: a session past its request count, or past its memory threshold (its
// jail cgroup's usage), is replaced while 24 queries run at once, over and over,
// and not one query fails or answers wrong; the replaced jails are gone after.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rootId } from '../src/store/types.js';
import type { Session } from '../src/lsp/session/session.js';
import { cannotJail, lineOf, lspQuery, position, shaOf, startLspd, uploadFixture, waitFor, type Lspd } from './helpers/lsp-harness.js';

const skip = cannotJail();
const FX = 'ts-basic';
const WORKERS = 24;

const queries: { body: Record<string, unknown>; check(a: Record<string, unknown>): void }[] = [
  {
    body: { op: 'definition', path: 'src/app.ts', ...position(FX, 'src/app.ts', "greet('world')") },
    check: (a) => {
      const locs = a.locations as { path: string; range: { start: { line: number } } }[];
      assert.deepEqual(
        locs.map((l) => `${l.path}:${l.range.start.line}`),
        [`src/greet.ts:${lineOf(FX, 'src/greet.ts', 'export function greet')}`],
      );
    },
  },
  {
    body: { op: 'hover', path: 'src/app.ts', ...position(FX, 'src/app.ts', "greet('again')") },
    check: (a) => assert.match(String(a.contents), /function greet\(name: string\): string/),
  },
  {
    body: { op: 'documentSymbols', path: 'src/greet.ts' },
    check: (a) =>
      assert.ok(
        (a.symbols as { name: string }[]).some((s) => s.name === 'greet'),
        JSON.stringify(a.symbols),
      ),
  },
];

async function total(c: { get(): Promise<{ values: { value: number; labels: Record<string, unknown> }[] }> }, label?: [string, string]): Promise<number> {
  return (await c.get()).values.filter((v) => !label || v.labels[label[0]] === label[1]).reduce((n, v) => n + v.value, 0);
}

/**
 * WORKERS clients each asking one query after another, until the session they
 * started on has been replaced and each has asked 3 more (at most 60 each).
 */
async function runUntilReplaced(d: Lspd, root: { org: string; repo: string; sha: string }): Promise<{ answers: number; first: Session }> {
  const current = () => d.lsp.pool.list().find((s) => s.key.rootId === rootId(root));
  const first = current()!;
  assert.ok(first, 'a session to start on');
  let answers = 0;
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      let after = 0;
      for (let i = 0; i < 60 && after < 3; i++) {
        const q = queries[(w + i) % queries.length]!;
        const r = await lspQuery(d.url, { ...root, ...q.body });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        assert.equal(r.body.incomplete, false);
        q.check(r.body);
        answers++;
        if (current() !== first) after++;
      }
    }),
  );
  return { answers, first };
}

for (const c of [
  { what: 'its request count', env: { LSPD_SESSION_RECYCLE_REQUESTS: '5', LSPD_SESSION_RECYCLE_MEMORY_BYTES: '0' }, reason: 'requests' },
  // Every TS server uses more than 1 MiB: each one is replaced as soon as it is looked at.
  { what: 'its memory', env: { LSPD_SESSION_RECYCLE_REQUESTS: '0', LSPD_SESSION_RECYCLE_MEMORY_BYTES: String(1024 * 1024) }, reason: 'memory' },
]) {
  describe(`a session past ${c.what} is replaced under load`, { skip }, () => {
    let d: Lspd;
    const root = { org: 'acme', repo: 'recycle', sha: shaOf(`recycle-${c.reason}`) };
    before(async () => {
      d = await startLspd({ env: { ...c.env, LSPD_RESULT_CACHE_ENTRIES: '0' } });
      await uploadFixture(d.url, root, FX);
    });
    after(() => d?.close());

    test(`${WORKERS} concurrent clients: none fails, each answer right`, async (t) => {
      // One session, past the threshold before the load starts.
      for (let i = 0; i < 6; i++) {
        const q = queries[i % queries.length]!;
        const r = await lspQuery(d.url, { ...root, ...q.body });
        assert.equal(r.status, 200, JSON.stringify(r.body));
        q.check(r.body);
      }
      const spawned = await total(d.metrics.spawns);
      const firstPid = d.lsp.pool.list()[0]?.pid;
      const { answers, first } = await runUntilReplaced(d, root);
      assert.ok(answers >= WORKERS * 3, `${answers} answers`);
      assert.ok((await total(d.metrics.recycles, ['reason', c.reason])) >= 1, 'recycled for its threshold');
      assert.ok((await total(d.metrics.spawns)) > spawned, 'a successor was spawned');
      assert.equal(await total(d.metrics.crashes), 0, 'no session failed');
      t.diagnostic(`${answers} answers, ${await total(d.metrics.recycles)} recycles, ${(await total(d.metrics.spawns)) - spawned} spawns`);
      // The replaced session stops once its last query is done, its jail with it.
      assert.ok(await waitFor(() => first.state.kind === 'stopped', 30_000), `the old session is ${first.state.kind}`);
      assert.ok(firstPid !== undefined);
      const gone = () => {
        try {
          process.kill(firstPid, 0);
          return false;
        } catch {
          return true;
        }
      };
      assert.ok(await waitFor(gone, 30_000), "the replaced session's jail is gone");
    });
  });
}
