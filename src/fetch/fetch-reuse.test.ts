import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { reuseUnits, touchesFetchInputs, unitRels, workspaceDigest, type InputEntry } from './fetch-reuse.js';
import type { Workspace } from './types.js';

describe('fetch reuse', () => {
  it('a layer touches the fetch when it changes a lockfile, a manifest or a committed node_modules, anywhere', () => {
    for (const p of [
      'package-lock.json',
      'web/package.json',
      'svc/go.sum',
      'go.mod',
      'pyproject.toml',
      'node_modules/x/index.js',
      'app/.npmrc',
      'utils/doclint/requirements.txt',
      'py/uv.lock',
      'php/composer.lock',
    ]) {
      assert.equal(touchesFetchInputs(['src/a.ts', p]), true, p);
    }
    for (const p of ['src/package.ts', 'docs/go.mod.md', 'README.md', 'node_modules_notes.md']) assert.equal(touchesFetchInputs([p]), false, p);
  });

  it("a workspace's digest changes only with the files its own fetch reads", () => {
    const tree: InputEntry[] = [
      { path: 'package.json', kind: 'file', id: 'a1' },
      { path: 'package-lock.json', kind: 'file', id: 'a2' },
      { path: 'packages/x/package.json', kind: 'file', id: 'a3' },
      { path: 'utils/doclint/requirements.txt', kind: 'file', id: 'p1' },
    ];
    const npm: Workspace = { ecosystem: 'npm', dir: '' };
    const py: Workspace = { ecosystem: 'python', dir: 'utils/doclint' };
    const pyChanged = tree.map((e) => (e.path.endsWith('requirements.txt') ? { ...e, id: 'p2' } : e));
    assert.equal(workspaceDigest(pyChanged, npm), workspaceDigest(tree, npm), 'a Python lock is not an npm input');
    assert.notEqual(workspaceDigest(pyChanged, py), workspaceDigest(tree, py));
    const memberChanged = tree.map((e) => (e.path === 'packages/x/package.json' ? { ...e, id: 'a9' } : e));
    assert.notEqual(workspaceDigest(memberChanged, npm), workspaceDigest(tree, npm), "a member's package.json is the root workspace's input");
    assert.equal(workspaceDigest(memberChanged, py), workspaceDigest(tree, py));
    assert.equal(workspaceDigest([{ path: 'package.json', kind: 'file', id: '' }], npm), undefined, 'no blob id, no reuse claimed');
    assert.notEqual(workspaceDigest([], npm), workspaceDigest([], { ecosystem: 'npm', dir: 'web' }), 'another workspace, another digest');
  });

  it('workspaces whose output dirs nest, and every Go module, are one unit', () => {
    const steps: Workspace[] = [
      { ecosystem: 'npm', dir: '' },
      { ecosystem: 'npm', dir: 'a' },
      { ecosystem: 'npm', dir: 'a/b' },
      { ecosystem: 'go', dir: 'svc' },
      { ecosystem: 'go', dir: 'tools' },
      { ecosystem: 'python', dir: 'utils/doclint' },
    ];
    const units = reuseUnits(steps).map((u) => u.map((s) => `${s.ecosystem}:${s.dir}`).sort());
    assert.deepEqual(units.sort(), [['go:svc', 'go:tools'], ['npm:'], ['npm:a', 'npm:a/b'], ['python:utils/doclint']].sort());
    assert.deepEqual(unitRels([steps[1]!, steps[2]!]), ['npm/ws/a']);
    assert.deepEqual(unitRels([steps[3]!, steps[4]!]), ['go/pkg/mod']);
  });
});
