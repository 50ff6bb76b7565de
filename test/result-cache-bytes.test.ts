// The result cache is bounded in bytes (issue 30): a real daemon, the native TS 7
// server in the real SERVE jail, a small LSPD_RESULT_CACHE_BYTES. Many distinct
// complete answers: the bytes it holds (lspd_cache_bytes{cache="result"}) never pass
// the budget, the oldest answer was evicted (asked again it is a miss), the newest
// is a hit and the same answer. Asserted by bytes and cache counters.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cannotJail, fixturesDir, lspQuery, shaOf, startLspd, uploadFixture, type Lspd } from './helpers/lsp-harness.js';

const BUDGET = 16 * 1024;
const root = { org: 'acme', repo: 'cache-bytes', sha: shaOf('result-cache-bytes') };

describe('the result cache at its byte budget evicts (TS 7 in the SERVE jail)', { skip: cannotJail() }, () => {
  let d: Lspd;
  before(async () => {
    d = await startLspd({ env: { LSPD_RESULT_CACHE_BYTES: String(BUDGET) } });
    await uploadFixture(d.url, root, 'ts-basic');
  });
  after(() => d?.close());

  const held = async () => (await d.metrics.cacheBytes.get()).values.find((v) => v.labels.cache === 'result')?.value ?? 0;
  const lookups = async (result: string) => (await d.metrics.cache.get()).values.find((v) => v.labels.result === result)?.value ?? 0;
  // Hovers every third column of greet.ts and app.ts: over a hundred distinct keys, each a complete answer well under the budget.
  const queries = ['src/greet.ts', 'src/app.ts']
    .flatMap((path) =>
      readFileSync(join(fixturesDir, 'ts-basic', path), 'utf8')
        .split('\n')
        .flatMap((text, line) => Array.from({ length: Math.ceil(text.length / 3) }, (_, k) => ({ ...root, op: 'hover', path, line, character: k * 3 }))),
    )
    .slice(0, 150);

  test('held bytes stay within the budget; the first answer was evicted, the last is served from the cache', { timeout: 300_000 }, async () => {
    const answers: Record<string, unknown>[] = [];
    let bodyBytes = 0;
    for (const q of queries) {
      const r = await lspQuery(d.url, q);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.incomplete, false);
      answers.push(r.body);
      bodyBytes += Buffer.byteLength(JSON.stringify(r.body));
      const h = await held();
      assert.ok(h <= BUDGET, `${h} bytes held`);
    }
    assert.ok(queries.length > 100, `${queries.length} queries`);
    assert.ok(bodyBytes > 2 * BUDGET, `${bodyBytes} bytes of answers: more than the budget holds`);
    assert.ok((await held()) > 0);

    const [misses, hits] = [await lookups('miss'), await lookups('hit')];
    const last = await lspQuery(d.url, queries.at(-1)!);
    assert.equal(await lookups('hit'), hits + 1, 'the newest answer is still held');
    const strip = ({ elapsed_ms: _e, ...rest }: Record<string, unknown>) => rest;
    assert.deepEqual(strip(last.body), strip(answers.at(-1)!));
    const first = await lspQuery(d.url, queries[0]!);
    assert.equal(first.status, 200);
    assert.equal(await lookups('miss'), misses + 1, 'the oldest answer was evicted');
    assert.deepEqual(strip(first.body), strip(answers[0]!));
  });
});
