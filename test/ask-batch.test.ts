// POST /ask with a batch, end to end (real lspd, real jail, real servers): 20 mixed
// queries, two of them bad, answer all 20 in order; a bad one gets its own
// {error, message} entry and fails nothing else; the batch as a whole is refused
// only for what no query of it could survive (schema of the envelope, unknown root).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { askSuite } from './helpers/ask-suite.js';
import { postJson, shaOf } from './helpers/lsp-harness.js';

const root = { org: 'acme', repo: 'ask-batch', sha: shaOf('ask-batch') };
const daemon = askSuite({ uploads: [[root, 'ask-ts']] });

test('a batch of 20 mixed queries, two bad, answers all 20 in order', { timeout: 180_000 }, async (t) => {
  if (daemon.skipWhy()) return t.skip(daemon.skipWhy());
  const queries: Record<string, unknown>[] = [
    { symbol: 'Server' },
    { symbol: 'Server.close' },
    { symbol: 'close' },
    { symbol: 'Server.close', op: 'references' },
    { symbol: 'Server.close', op: 'hover' },
    { symbol: 'greet' },
    { symbol: 'greet', op: 'hover' },
    { symbol: 'format' },
    { symbol: 'parse' },
    { symbol: 'a.parse' },
    { symbol: 'b.parse', op: 'references' },
    { symbol: 'Paths.join' },
    { symbol: 'paths.separator' },
    { symbol: 'noSuchNameInThisTree' }, // bad: unknown name → its own 404 entry
    { symbol: 'listen', op: 'hover' },
    { symbol: 'Server.listen' },
    { symbol: 'close', op: 'hover' }, // ambiguous: answered with candidates
    { symbol: 'report' },
    { symbol: 'Server', op: 'bogus' }, // bad: not an op → its own 400 entry
    { symbol: 'greeter.greet', path: 'src/main.ts' },
  ];
  assert.equal(queries.length, 20);
  const r = await postJson(daemon.url(), '/ask', { ...root, queries });
  assert.equal(r.status, 200, JSON.stringify(r.body).slice(0, 500));
  const answers = r.body.answers as Record<string, unknown>[];
  assert.equal(answers.length, 20);

  queries.forEach((q, i) => {
    const a = answers[i]!;
    if (i === 13) {
      assert.equal(a.error, 'symbol_not_found', JSON.stringify(a));
      assert.match(String(a.message), /noSuchNameInThisTree/);
      return;
    }
    if (i === 18) {
      assert.equal(a.error, 'bad_request', JSON.stringify(a));
      assert.match(String(a.message), /op/);
      return;
    }
    // Every other answer is the answer to its own question, in the same place.
    assert.equal(a.error, undefined, `${i}: ${JSON.stringify(a)}`);
    assert.equal(a.symbol, q.symbol, `answer ${i} is for ${String(a.symbol)}, not ${String(q.symbol)}`);
    assert.equal(a.op, q.op ?? 'locate', `answer ${i}`);
    assert.equal(a.untrusted, true);
  });
  assert.equal((answers[1]!.locations as { path: string }[])[0]!.path, 'src/server.ts');
  assert.equal(answers[2]!.matches, 2);
  assert.match(String(answers[4]!.contents), /Stops accepting connections/);
  assert.equal((answers[5]!.locations as { module: string }[])[0]!.module, 'greeter');
  assert.equal(answers[16]!.ambiguous, true);
  assert.equal((answers[19]!.locations as { external: boolean }[])[0]!.external, true);

  // The same questions one by one answer the same (the batch shares sessions and a memo, not answers).
  for (const i of [1, 5, 9]) {
    const one = await postJson(daemon.url(), '/ask', { ...root, ...queries[i] });
    assert.deepEqual(one.body.locations, answers[i]!.locations, `query ${i}`);
  }
});

test('batch envelope errors: empty, too many, not an array, unknown root', async (t) => {
  if (daemon.skipWhy()) return t.skip(daemon.skipWhy());
  for (const queries of [[], Array.from({ length: 101 }, () => ({ symbol: 'x' })), 'Server']) {
    const r = await postJson(daemon.url(), '/ask', { ...root, queries });
    assert.equal(r.status, 400, JSON.stringify(r.body));
    assert.equal(r.body.error, 'bad_request');
  }
  const r = await postJson(daemon.url(), '/ask', { ...root, sha: shaOf('never-uploaded'), queries: [{ symbol: 'x' }] });
  assert.equal(r.status, 409);
  assert.equal(r.body.error, 'need_tree');
});
