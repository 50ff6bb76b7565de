import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compareGoVersions, goModDirectives, goModNotes, goSessionNotes, installedGoVersion } from './go-mod.js';

test('goModDirectives reads the go and toolchain lines, comments and blocks aside', () => {
  const mod = 'module example.com/m // the module\n\ngo 1.22 // language\n\ntoolchain go1.25.0\n\nrequire (\n\tgo v1.0.0\n)\n';
  assert.deepEqual(goModDirectives(mod), { go: '1.22', toolchain: '1.25.0' });
  assert.deepEqual(goModDirectives('module m\n'), {});
  assert.deepEqual(goModDirectives('go $(evil)\n'), {}, 'not a version: ignored');
});

test("compareGoVersions follows Go's order: language version < pre-release < release", () => {
  const order = ['1.19', '1.22', '1.24', '1.24.4', '1.24.5', '1.25', '1.25rc1', '1.25.0', '1.25.1', '2'];
  for (let i = 0; i + 1 < order.length; i++) {
    assert.ok(compareGoVersions(order[i]!, order[i + 1]!) < 0, `${order[i]} < ${order[i + 1]}`);
    assert.ok(compareGoVersions(order[i + 1]!, order[i]!) > 0, `${order[i + 1]} > ${order[i]}`);
  }
  assert.equal(compareGoVersions('1.24.4', '1.24.4'), 0);
});

test('goModNotes: a go line above the installed Go, else a toolchain line above it; nothing at or below', () => {
  assert.deepEqual(goModNotes('go 1.22\n', '1.24.4'), []);
  assert.deepEqual(goModNotes('go 1.24.4\ntoolchain go1.24.4\n', '1.24.4'), []);
  assert.match(goModNotes('go 1.25.0\ntoolchain go1.25.1\n', '1.24.4').join(), /^go\.mod requires go 1\.25\.0, newer than this daemon's Go 1\.24\.4: /);
  assert.deepEqual(goModNotes('go 1.22\ntoolchain go1.25.0\n', '1.24.4'), [
    'go.mod prefers toolchain go1.25.0; lspd never downloads one (GOTOOLCHAIN=local): answers come from Go 1.24.4.',
  ]);
});

test("goSessionNotes reads the workspace's go.mod (a regular file, never a link) against the Go tree's VERSION", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'lspd-go-mod-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const goroot = join(dir, 'goroot');
  mkdirSync(goroot);
  writeFileSync(join(goroot, 'VERSION'), 'go1.24.4\ntime 2025-05-29T19:37:36Z\n');
  assert.equal(await installedGoVersion(goroot), '1.24.4');
  const tree = join(dir, 'tree');
  mkdirSync(join(tree, 'new'), { recursive: true });
  mkdirSync(join(tree, 'linked'));
  writeFileSync(join(tree, 'new', 'go.mod'), 'module m\n\ngo 1.25.0\n');
  symlinkSync('../new/go.mod', join(tree, 'linked', 'go.mod'));
  const notes = await goSessionNotes({ treeHostDir: tree, workspace: 'new' }, goroot);
  assert.deepEqual(notes.files, {});
  assert.match(notes.notes.join(), /^go\.mod requires go 1\.25\.0, newer than this daemon's Go 1\.24\.4/);
  assert.deepEqual(await goSessionNotes({ treeHostDir: tree, workspace: 'linked' }, goroot), { files: {}, notes: [] }, 'a link is not read');
  assert.deepEqual(await goSessionNotes({ treeHostDir: tree, workspace: '' }, goroot), { files: {}, notes: [] }, 'no go.mod: nothing to say');
});
