// Patches made by git itself (`git diff` of two scratch trees) are applied in memory and
// must give exactly the files git has; malformed and hostile patches are refused
// with the file and hunk named, never half-applied.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { applyFilePatch, parsePatch, PatchApplyError, PatchSyntaxError, PatchTooLargeError } from './apply-patch.js';

const LIMITS = { maxFiles: 50, maxHunks: 500 };

/** git's own patch from tree `a` to tree `b` (a file absent on a side is added or deleted); --no-prefix makes the sides' dirs the a/ and b/ prefixes. */
function gitPatch(a: Record<string, string>, b: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'lspd-apply-'));
  try {
    const write = (side: string, files: Record<string, string>) => {
      mkdirSync(join(dir, side), { recursive: true });
      for (const [p, t] of Object.entries(files)) {
        mkdirSync(dirname(join(dir, side, p)), { recursive: true });
        writeFileSync(join(dir, side, p), t);
      }
    };
    write('a', a);
    write('b', b);
    const r = spawnSync('git', ['diff', '--no-index', '--no-renames', '--no-color', '--no-prefix', 'a', 'b'], { cwd: dir, encoding: 'utf8' });
    assert.equal(r.status, 1, r.stderr);
    return r.stdout;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Apply `patch` to `tree` in memory: the resulting tree. */
function applied(tree: Record<string, string>, patch: string): Record<string, string> {
  const out = { ...tree };
  for (const f of parsePatch(patch, LIMITS)) {
    const text = applyFilePatch(f, tree[f.path]);
    if (f.change === 'delete') delete out[f.path];
    else out[f.path] = text;
  }
  return out;
}

test('git patches of modified, added and deleted files apply to exactly what git has', () => {
  const long = Array.from({ length: 40 }, (_, i) => `line ${i}\n`).join('');
  const a = { 'src/m.ts': long, 'src/gone.ts': 'export const x = 1;\n', 'keep.txt': 'same\n' };
  const b = {
    'src/m.ts': long.replace('line 3\n', 'LINE 3\n').replace('line 30\n', 'line 30\nnew 30b\n'),
    'src/new/added.ts': 'export const y = 2;\n',
    'keep.txt': 'same\n',
  };
  const p = gitPatch(a, b);
  const files = parsePatch(p, LIMITS);
  assert.deepEqual(
    files.map((f) => [f.change, f.path]).sort(),
    [
      ['add', 'src/new/added.ts'],
      ['delete', 'src/gone.ts'],
      ['modify', 'src/m.ts'],
    ].sort(),
  );
  assert.equal(files.find((f) => f.path === 'src/m.ts')!.hunks.length, 2);
  assert.deepEqual(applied(a, p), b);
});

test('no newline at end of file, on either side, and CRLF lines are kept', () => {
  const a = { 'a.ts': 'one\r\ntwo\r\nthree', 'b.ts': 'x\ny\n' };
  const b = { 'a.ts': 'one\r\nTWO\r\nthree\r\n', 'b.ts': 'x\ny' };
  assert.deepEqual(applied(a, gitPatch(a, b)), b);
  const c = { 'a.ts': 'one\r\nTWO\r\nthree\r\n', 'b.ts': 'x\nz' };
  assert.deepEqual(applied(b, gitPatch(b, c)), c);
});

test('a hunk moved by lines above it applies at its offset; one whose lines are gone names file and hunk', () => {
  const base = Array.from({ length: 30 }, (_, i) => `l${i}\n`).join('');
  const p = gitPatch({ 'f.py': base }, { 'f.py': base.replace('l5\n', 'L5\n').replace('l25\n', 'L25\n') });
  // Two lines added at the top since the patch was made: both hunks land 2 lines lower.
  const shifted = 'x\ny\n' + base;
  assert.equal(applied({ 'f.py': shifted }, p)['f.py'], shifted.replace('l5\n', 'L5\n').replace('l25\n', 'L25\n'));
  const changed = base.replace('l24\n', 'other\n');
  assert.throws(
    () => applied({ 'f.py': changed }, p),
    (e: unknown) => e instanceof PatchApplyError && e.path === 'f.py' && e.hunk === 2 && /hunk 2 of f.py/.test(e.message),
  );
});

test('a file the tree lacks, or already has, does not apply', () => {
  const p = gitPatch({ 'a.ts': 'x\n' }, { 'a.ts': 'y\n' });
  assert.throws(
    () => applied({}, p),
    (e: unknown) => e instanceof PatchApplyError && e.path === 'a.ts' && /no such file/.test(e.message),
  );
  const add = gitPatch({}, { 'n.ts': 'y\n' });
  assert.throws(
    () => applied({ 'n.ts': 'y\n' }, add),
    (e: unknown) => e instanceof PatchApplyError && /has it already/.test(e.message),
  );
  const del = gitPatch({ 'd.ts': 'a\nb\n' }, {});
  assert.throws(() => applied({ 'd.ts': 'a\nb\nc\n' }, del), PatchApplyError);
});

test('paths outside the root, renames and malformed hunks are refused as syntax', () => {
  const hdr = (a: string, b: string) => `--- ${a}\n+++ ${b}\n@@ -1 +1 @@\n-x\n+y\n`;
  for (const bad of [hdr('a/../etc/passwd', 'b/../etc/passwd'), hdr('/etc/passwd', '/etc/passwd'), hdr('a/x\\y', 'b/x\\y'), hdr('a/p', 'b/q')]) {
    assert.throws(() => parsePatch(bad, LIMITS), PatchSyntaxError, bad);
  }
  assert.throws(() => parsePatch('diff --git a/x b/y\nsimilarity index 90%\nrename from x\nrename to y\n', LIMITS), /renames/);
  assert.throws(() => parsePatch('--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-x\n+y\n', LIMITS), /ends early/);
  assert.throws(() => parsePatch('--- a/x\n+++ b/x\n@@ -1 +1 @@\n*x\n', LIMITS), /neither space/);
  assert.throws(() => parsePatch('@@ -1 +1 @@\n-x\n+y\n', LIMITS), /before any/);
  assert.throws(() => parsePatch('just words\n', LIMITS), /no file header/);
  assert.throws(() => parsePatch('--- a/x\n+++ b/x\n@@ -1 +1 @@\n-x\n+y\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-x\n+y\n', LIMITS), /patched twice/);
});

test('files and hunks are bounded', () => {
  const many = Array.from({ length: 3 }, (_, i) => `--- a/f${i}\n+++ b/f${i}\n@@ -1 +1 @@\n-x\n+y\n`).join('');
  assert.throws(() => parsePatch(many, { maxFiles: 2, maxHunks: 100 }), PatchTooLargeError);
  const hunks = '--- a/f\n+++ b/f\n' + Array.from({ length: 5 }, (_, i) => `@@ -${i * 10 + 1} +${i * 10 + 1} @@\n-x\n+y\n`).join('');
  assert.throws(() => parsePatch(hunks, { maxFiles: 2, maxHunks: 4 }), PatchTooLargeError);
});

test('fuzz: random mutations of a real patch are parsed or refused by type, never thrown otherwise', () => {
  const base = Array.from({ length: 20 }, (_, i) => `const v${i} = ${i};\n`).join('');
  const p = gitPatch({ 'src/a.ts': base, 'src/b.ts': 'x\n' }, { 'src/a.ts': base.replace('v7 = 7', 'v7 = 70'), 'src/c.ts': 'n\n' });
  let seed = 7;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed % n);
  const junk = ['@', '-', '+', ' ', '\\', '\n', '\r', '/', '.', '"', '\t', 'a/', '../', '@@ -0,0 +1 @@', '/dev/null', '\u0000'];
  for (let round = 0; round < 2000; round++) {
    const chars = [...p];
    for (let k = 1 + rnd(4); k > 0; k--) {
      const at = rnd(chars.length);
      if (rnd(2)) chars.splice(at, 1 + rnd(3));
      else chars.splice(at, 0, junk[rnd(junk.length)]!);
    }
    const text = chars.join('');
    try {
      const files = parsePatch(text, LIMITS);
      for (const f of files) {
        assert.ok(!f.path.split('/').includes('..') && !f.path.startsWith('/'), f.path);
        try {
          applyFilePatch(f, f.path === 'src/a.ts' ? base : f.path === 'src/b.ts' ? 'x\n' : undefined);
        } catch (e) {
          assert.ok(e instanceof PatchApplyError, String(e));
        }
      }
    } catch (e) {
      assert.ok(e instanceof PatchSyntaxError || e instanceof PatchTooLargeError, `${String(e)}\n${JSON.stringify(text)}`);
    }
  }
});
