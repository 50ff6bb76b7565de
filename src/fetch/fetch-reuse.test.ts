import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { coveredSteps, touchesFetchInputs } from './fetch-reuse.js';

describe('fetch reuse', () => {
  it('a layer touches the fetch when it changes a lockfile, a manifest or a committed node_modules, anywhere', () => {
    for (const p of [
      'package-lock.json',
      'web/package.json',
      'svc/go.sum',
      'go.mod',
      'a/b/Cargo.lock',
      'pyproject.toml',
      'node_modules/x/index.js',
      'app/.npmrc',
    ]) {
      assert.equal(touchesFetchInputs(['src/a.ts', p]), true, p);
    }
    for (const p of ['src/package.ts', 'docs/go.mod.md', 'README.md', 'node_modules_notes.txt']) assert.equal(touchesFetchInputs([p]), false, p);
  });

  it("a done base covers the head's plan only when it finished every step the head would run", () => {
    const head = [
      { ecosystem: 'npm' as const, dir: '', state: 'queued' as const },
      { ecosystem: 'python' as const, dir: '', state: 'refused' as const, reason: 'no' },
    ];
    assert.deepEqual(coveredSteps(head, [{ ecosystem: 'npm', dir: '', state: 'done' }]), [
      { ecosystem: 'npm', dir: '', state: 'done' },
      { ecosystem: 'python', dir: '', state: 'refused', reason: 'no' },
    ]);
    assert.equal(coveredSteps(head, [{ ecosystem: 'npm', dir: '', state: 'failed' }]), undefined);
    assert.equal(coveredSteps(head, [{ ecosystem: 'npm', dir: 'web', state: 'done' }]), undefined);
  });
});
