// Cross-commit fetch reuse for full uploads (issue 15), with the real store, the
// real FETCH and SERVE jails and a hermetic npm registry: a second commit of one
// repo uploaded whole, with the same package-lock.json (and manifests) as a stored
// root whose fetch is done, gets that fetch as hard links without a single
// registry request, and a definition into node_modules answers right from it. The
// same tree under another org fetches for itself: reuse never crosses orgs.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { cannotJail, fetchSettled, shaOf, startLspd, uploadFixture, type Lspd } from './helpers/lsp-harness.js';
import { assertLeftPadDefinition } from './helpers/npm-dep.js';
import { startNpmRegistry, type NpmRegistry } from './helpers/npm-registry.js';

const skip = cannotJail();
const FX = 'npm-dep';
const first = { org: 'acme', repo: 'twin', sha: shaOf('twin-1') };
const second = { org: 'acme', repo: 'twin', sha: shaOf('twin-2') };
const otherOrg = { org: 'other', repo: 'twin', sha: shaOf('twin-2') };

describe("a full upload with the same lockfile reuses a stored commit's fetch", { skip }, () => {
  let d: Lspd;
  let registry: NpmRegistry;
  before(async () => {
    registry = await startNpmRegistry();
    d = await startLspd({ env: { LSPD_NPM_REGISTRY: registry.url, LSPD_FETCH_REGISTRIES: registry.authority } });
  });
  after(async () => {
    await d?.close();
    await registry?.close();
  });

  const nodeModules = (k: typeof first) => join(d.store.depsDir(k), 'npm', 'top', 'node_modules');
  const pkg = 'left-pad-lite/package.json';

  test('no registry request for the second commit; its definition into node_modules is right; another org fetches its own', async () => {
    await uploadFixture(d.url, first, FX);
    const one = await fetchSettled(d.url, first);
    assert.equal(one.state, 'done', JSON.stringify(one));
    const hits = registry.hits.length;
    assert.ok(
      registry.hits.some((h) => h.endsWith('.tgz')),
      'the first commit fetched from the registry',
    );

    await uploadFixture(d.url, second, FX);
    const two = await fetchSettled(d.url, second);
    assert.equal(two.state, 'done', JSON.stringify(two));
    assert.match(two.log ?? '', new RegExp(`linked from ${first.sha}: the same lockfiles and manifests`));
    assert.equal(registry.hits.length, hits, 'no registry request for the second commit');
    assert.equal(statSync(join(nodeModules(second), pkg)).ino, statSync(join(nodeModules(first), pkg)).ino, "a link to the first commit's file");

    await assertLeftPadDefinition(d.url, second);

    // The same tree and lockfile, another org: a fetch of its own.
    await uploadFixture(d.url, otherOrg, FX);
    const other = await fetchSettled(d.url, otherOrg);
    assert.equal(other.state, 'done', JSON.stringify(other));
    assert.doesNotMatch(other.log ?? '', /linked from/);
    assert.ok(registry.hits.length > hits, 'the other org fetched from the registry');
    assert.notEqual(statSync(join(nodeModules(otherOrg), pkg)).ino, statSync(join(nodeModules(first), pkg)).ino);
  });
});
