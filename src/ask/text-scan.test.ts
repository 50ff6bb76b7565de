// Unit tests of the text helpers: whole-word occurrences, probe ranking, encodings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findNameFrom, findOccurrences, fromUtf16, toUtf16, wordColumns } from './text-scan.js';

test('wordColumns: whole words only', () => {
  assert.deepEqual(wordColumns('close(closeAll, close_, _close, $close, close)', 'close'), [0, 40]);
  assert.deepEqual(wordColumns('s.close()', 'close'), [2]);
  assert.deepEqual(wordColumns('𝒳close 𝒳 close', 'close'), [11]);
});

test('findOccurrences: qualified first, then imports, then calls, comments last', () => {
  const text = [
    '// greet is nice', // 0
    "import { greet } from 'greeter';", // 1
    'const x = greet;', // 2
    'greet("a");', // 3
    'dep.greet("b");', // 4
  ].join('\n');
  const occ = findOccurrences(text, 'greet', ['dep']);
  assert.deepEqual(occ.map((o) => [o.line, o.rank]), [[4, 0], [1, 1], [3, 2], [2, 3], [0, 6]]);
  assert.equal(occ[0]!.qualified, true);
  assert.equal(findOccurrences(text, 'greet', [], 2).length, 2);
  assert.deepEqual(findOccurrences('from pkg.mod import func\nfunc()\n', 'func', ['mod']).map((o) => o.line), [0, 1]);
  assert.equal(findOccurrences('Server::close();', 'close', ['Server'])[0]!.qualified, true);
});

test('findNameFrom: the name after a declaration start', () => {
  const text = 'export class Server {\n  @dec\n  async close(): Promise<void> {}\n}\n';
  assert.deepEqual(findNameFrom(text, 'close', { line: 1, character: 2 }), { line: 2, character: 8 });
  assert.deepEqual(findNameFrom(text, 'Server', { line: 0, character: 0 }), { line: 0, character: 13 });
  assert.equal(findNameFrom(text, 'missing', { line: 0, character: 0 }), undefined);
});

test('column conversions round-trip for utf-8 and code points', () => {
  const line = 'é𝒳 = close';
  const col16 = line.indexOf('close'); // 6 (é=1, 𝒳=2, ' = '=3)
  assert.equal(col16, 6);
  assert.equal(fromUtf16(line, col16, 'utf-8'), 9); // é=2 bytes, 𝒳=4, ' = '=3
  assert.equal(fromUtf16(line, col16, 'codepoint'), 5);
  assert.equal(toUtf16(line, 9, 'utf-8'), col16);
  assert.equal(toUtf16(line, 5, 'codepoint'), col16);
  assert.equal(toUtf16(line, 6, 'utf-16'), 6);
});
