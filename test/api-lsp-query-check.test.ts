// The precompiled check of /v1/code/lsp bodies (src/api/lsp-query-check.ts) against
// zod, the schema of record: on every body it accepts, it must give what zod gives;
// it must accept nothing zod refuses (so every refusal, and its wording, stays
// zod's); and it must take the common shapes (else it buys nothing).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fastLspQuery } from '../src/api/lsp-query-check.js';
import { lspQuery } from '../src/api/schemas.js';

const sha = 'a'.repeat(40);
const base = { org: 'acme', repo: 'web.app', sha, op: 'definition', path: 'src/app.ts', line: 3, character: 7 };

const valid: Record<string, unknown>[] = [
  base,
  { ...base, op: 'references', includeDeclaration: false, context: 2, limit: 50 },
  { ...base, op: 'hover', encoding: 'utf-8' },
  { ...base, op: 'typeDefinition', encoding: 'codepoint', cursor: 'abc' },
  { ...base, op: 'implementation', sha: 'b'.repeat(64) },
  { org: 'a', repo: 'b', sha, op: 'documentSymbols', path: 'x.go', query: 'Foo' },
  { org: 'a', repo: 'b', sha, op: 'diagnostics', path: 'dir/x.py' },
  { org: 'a', repo: 'b', sha, op: 'diagnostics', path: 'x.py', line: 0, character: 0 },
  { ...base, path: 'a/..b/c..', line: 10_000_000, character: 0 },
  { ...base, path: 'ünï/cødé.ts', query: 'q'.repeat(512), cursor: 'c'.repeat(200) },
];

const invalid: Record<string, unknown>[] = [
  { ...base, org: '..' },
  { ...base, org: '.' },
  { ...base, org: '-x' },
  { ...base, repo: 'a b' },
  { ...base, org: 'o'.repeat(101) },
  { ...base, sha: 'A'.repeat(40) },
  { ...base, sha: 'a'.repeat(41) },
  { ...base, op: 'nope' },
  { ...base, op: 'toString' },
  { ...base, op: 'constructor' },
  { ...base, path: '/etc/passwd' },
  { ...base, path: 'a/../b' },
  { ...base, path: '..' },
  { ...base, path: 'a/..' },
  { ...base, path: 'a\\b' },
  { ...base, path: 'C:/x' },
  { ...base, path: 'a\u0000b' },
  { ...base, path: 'a\u007fb' },
  { ...base, path: '' },
  { ...base, path: 'p'.repeat(4097) },
  { ...base, path: 3 },
  { ...base, line: -1 },
  { ...base, line: 1.5 },
  { ...base, line: 10_000_001 },
  { ...base, line: '3' },
  { ...base, character: undefined },
  { ...base, line: undefined },
  { ...base, encoding: 'utf-32' },
  { ...base, includeDeclaration: 'yes' },
  { ...base, context: 21 },
  { ...base, context: -1 },
  { ...base, limit: 0 },
  { ...base, limit: 1001 },
  { ...base, cursor: 'c'.repeat(201) },
  { ...base, query: 'q'.repeat(513) },
  { ...base, extra: 1 },
  { ...base, constructor: 1 },
  { ...base, toString: 'x' },
  { ...base, hasOwnProperty: true },
  { ...base, depth: 1 },
  { ...base, newName: 'x' },
  { org: 'a', repo: 'b', sha, op: 'documentSymbols' },
  { ...base, line: Number.NaN },
  { ...base, line: Number.POSITIVE_INFINITY },
];

test('the fast check gives what zod gives on every valid body it takes, and takes the common shapes', () => {
  for (const body of valid) {
    const z = lspQuery.safeParse(body);
    assert.ok(z.success, `zod takes ${JSON.stringify(body)}`);
    const fast = fastLspQuery(body);
    assert.ok(fast, `the fast check takes ${JSON.stringify(body)}`);
    assert.deepStrictEqual(fast, z.data);
  }
});

test('the fast check takes nothing zod refuses: every refusal stays zod’s', () => {
  for (const body of invalid) {
    for (const b of [body, Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined))]) {
      const z = lspQuery.safeParse(b);
      assert.ok(!z.success, `zod refuses ${JSON.stringify(b)}`);
      assert.equal(fastLspQuery(b), undefined, `the fast check refuses ${JSON.stringify(b)}`);
    }
  }
  for (const b of [null, undefined, 'x', 3, [], Object.create(null)]) assert.equal(fastLspQuery(b), undefined);
});

test('on bodies made by mutating valid ones field by field, the fast check never takes what zod refuses and agrees when it takes', () => {
  const values: unknown[] = [
    undefined,
    null,
    '',
    'x',
    '..',
    '/a',
    'a/../b',
    'A'.repeat(40),
    'a'.repeat(64),
    -1,
    0,
    1,
    1.5,
    20,
    21,
    1000,
    1001,
    true,
    false,
    [],
    {},
  ];
  let taken = 0;
  for (const body of valid)
    for (const k of [...Object.keys(lspQuery.shape), 'other'])
      for (const v of values) {
        const b: Record<string, unknown> = { ...body };
        if (v === undefined) delete b[k];
        else b[k] = v;
        const z = lspQuery.safeParse(b);
        const fast = fastLspQuery(b);
        if (fast) {
          taken++;
          assert.ok(z.success, `zod refuses what the fast check took: ${JSON.stringify(b)}`);
          assert.deepStrictEqual(fast, z.data);
        }
      }
  assert.ok(taken > 100, `${taken} mutated bodies taken`);
});
