// The patches lspd renders are judged by git itself: each is applied with `git apply`
// to a copy of the old text and must give exactly the text the edits describe.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lineEdits, EditError, type TextEdit } from './text-edits.js';
import { linesOf, unifiedDiff } from './unified-diff.js';

const at = (sl: number, sc: number, el: number, ec: number, newText: string): TextEdit => ({
  range: { start: { line: sl, character: sc }, end: { line: el, character: ec } },
  newText,
});

/** Patch `old` with `edits`, apply it with git to a scratch copy, return what git wrote. */
function gitApplied(old: string, edits: TextEdit[], name = 'src/a.ts'): { patch: string; after: string } {
  const lines = linesOf(old);
  const patch = unifiedDiff(name, lines, lineEdits(lines, edits, 'utf-16'));
  const dir = mkdtempSync(join(tmpdir(), 'lspd-diff-'));
  try {
    spawnSync('mkdir', ['-p', join(dir, 'src')]);
    writeFileSync(join(dir, name), old);
    writeFileSync(join(dir, 'p.diff'), patch);
    const r = spawnSync('git', ['apply', '--whitespace=nowarn', 'p.diff'], { cwd: dir, encoding: 'utf8' });
    assert.equal(r.status, 0, `git apply: ${r.stderr}\n${patch}`);
    return { patch, after: readFileSync(join(dir, name), 'utf8') };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('renames on several lines, far apart and close together, apply as git reads them', () => {
  const old = Array.from({ length: 40 }, (_, i) => (i % 10 === 3 ? `call(greet, ${i});\n` : `line ${i}\n`)).join('') + 'greet();\n';
  const edits = [3, 13, 23, 33].map((l) => at(l, 5, l, 10, 'welcome'));
  edits.push(at(40, 0, 40, 5, 'welcome'));
  const { patch, after } = gitApplied(old, edits);
  assert.equal(after, old.replaceAll('greet', 'welcome'));
  assert.equal((patch.match(/^@@/gm) ?? []).length, 4, 'the last two edits are 7 lines apart: one hunk');
  assert.match(patch, /^diff --git a\/src\/a\.ts b\/src\/a\.ts\n--- a\/src\/a\.ts\n\+\+\+ b\/src\/a\.ts\n@@ -1,7 \+1,7 @@\n/);
});

test('a file without a final newline, CRLF lines, several edits on one line, a multi-line edit', () => {
  const old = 'a greet b greet\r\nkeep\r\nx\r\ny\r\nlast greet';
  const { after } = gitApplied(old, [at(0, 2, 0, 7, 'hi'), at(0, 10, 0, 15, 'hi'), at(4, 5, 4, 10, 'hi'), at(2, 0, 3, 1, 'z')]);
  assert.equal(after, 'a hi b hi\r\nkeep\r\nz\r\nlast hi');
});

test('edits that add and remove lines keep later hunks numbered right', () => {
  const old = Array.from({ length: 30 }, (_, i) => `l${i}\n`).join('');
  const { after } = gitApplied(old, [at(2, 0, 2, 0, 'new1\nnew2\n'), at(20, 0, 22, 0, '')]);
  const want = old.split('\n');
  want.splice(20, 2);
  want.splice(2, 0, 'new1', 'new2');
  assert.equal(after, want.join('\n'));
});

test('UTF-16 positions on a line with astral characters', () => {
  const old = "const s = '😀'; greet(s);\n";
  const { after } = gitApplied(old, [at(0, 16, 0, 21, 'wave')]);
  assert.equal(after, "const s = '😀'; wave(s);\n");
});

test('no change is no patch; overlapping or out-of-file edits are refused', () => {
  const lines = linesOf('a\nb\n');
  assert.equal(unifiedDiff('x', lines, lineEdits(lines, [at(0, 0, 0, 1, 'a')], 'utf-16')), '');
  assert.throws(() => lineEdits(lines, [at(0, 0, 0, 1, 'x'), at(0, 0, 0, 1, 'y')], 'utf-16'), EditError);
  assert.throws(() => lineEdits(lines, [at(7, 0, 7, 1, 'x')], 'utf-16'), EditError);
});
