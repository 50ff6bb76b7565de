// The npm-dep fixture's question, asked by every test of its fetched dependency:
// the definition of require('left-pad-lite') in index.js, which must land in the
// fetched left-pad-lite@1.0.0 (an `external` location) once the fetch is done.
import assert from 'node:assert/strict';
import { lspQuery, position } from './lsp-harness.js';

type Root = { org: string; repo: string; sha: string };
type Loc = { external?: boolean; module?: string; version?: string; path: string };

/** Ask it on root; assert 200, dependencies done, an external location in left-pad-lite@1.0.0; the answer. */
export async function assertLeftPadDefinition(url: string, root: Root): Promise<Record<string, unknown>> {
  const r = await lspQuery(url, { ...root, op: 'definition', path: 'index.js', ...position('npm-dep', 'index.js', "require('left-pad-lite')", 9) });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body.dependencies, { state: 'done' });
  const locs = r.body.locations as Loc[];
  assert.ok(
    locs.some((l) => l.external === true && l.module === 'left-pad-lite' && l.version === '1.0.0'),
    JSON.stringify(r.body),
  );
  return r.body;
}
