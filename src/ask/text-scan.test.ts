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
  assert.deepEqual(
    occ.map((o) => [o.line, o.rank]),
    [
      [4, 0],
      [1, 1],
      [3, 2],
      [2, 3],
      [0, 6],
    ],
  );
  assert.equal(occ[0]!.qualified, true);
  assert.equal(findOccurrences(text, 'greet', [], 2).length, 2);
  assert.deepEqual(
    findOccurrences('from pkg.mod import func\nfunc()\n', 'func', ['mod']).map((o) => o.line),
    [0, 1],
  );
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

/** findOccurrences as it was (a pattern matched against everything before each occurrence): the oracle. */
function oracleOccurrences(text: string, leaf: string, qualifiers: readonly string[], max = 8) {
  const IMPORT_LINE = /^\s*(import\b|from\s+\S+\s+import\b|export\s+.*\bfrom\b|use\b|require\b|#include\b|using\b)|\brequire\s*\(/;
  const COMMENT_LINE = /^\s*(\/\/|#(?!include)|\*|\/\*|--|;)/;
  const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const lines = text.split(/\r\n|\r|\n/);
  const inner = qualifiers[qualifiers.length - 1];
  const found: { line: number; character: number; rank: number; qualified: boolean }[] = [];
  for (let n = 0; n < lines.length; n++) {
    const line = lines[n]!;
    if (!line.includes(leaf)) continue;
    for (const col of wordColumns(line, leaf)) {
      const head = line.slice(0, col);
      const qualified = inner !== undefined && new RegExp(`(?:^|[^\\p{L}\\p{N}_$])${escapeRe(inner)}\\s*(?:\\.|::|->|#|\\\\)\\s*$`, 'u').test(head);
      let rank = 3;
      if (COMMENT_LINE.test(line)) rank = 6;
      else if (qualified) rank = 0;
      else if (IMPORT_LINE.test(line)) rank = 1;
      else if (/^\s*\(/.test(line.slice(col + leaf.length))) rank = 2;
      found.push({ line: n, character: col, rank, qualified });
    }
  }
  return found.sort((a, b) => a.rank - b.rank || a.line - b.line || a.character - b.character).slice(0, max);
}

test('findOccurrences: the same answers as the pattern it replaced (random lines)', () => {
  let seed = 7;
  const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000;
  const parts = [
    'greet',
    'greet',
    'dep',
    'mydep',
    '.',
    '::',
    '->',
    '#',
    '\\',
    ' ',
    '  ',
    '\u00a0',
    '(',
    'import ',
    '// ',
    'x',
    '$',
    '𝒳',
    'require(',
    ';',
    '\n',
  ];
  for (let n = 0; n < 5000; n++) {
    const text = Array.from({ length: 1 + Math.floor(rand() * 30) }, () => parts[Math.floor(rand() * parts.length)]).join('');
    for (const [quals, max] of [
      [['dep'], 8],
      [[], 3],
      [['x', 'dep'], 2],
    ] as const) {
      assert.deepEqual(findOccurrences(text, 'greet', quals, max), oracleOccurrences(text, 'greet', quals, max), JSON.stringify(text));
    }
  }
});

test('findOccurrences: a 2 MiB line holding the name a million times is one pass, not a million', () => {
  // The pattern it replaced ran over everything before each occurrence: about 10^12
  // steps here, and on the event loop. (Bounded by the test's timeout, not a clock assertion.)
  const line = 'a '.repeat(1024 * 1024);
  const occ = findOccurrences(`${line}\n// a\nq.a()\n`, 'a', ['q'], 4);
  assert.deepEqual(
    occ.map((o) => [o.line, o.character, o.rank]),
    [
      [2, 2, 0],
      [0, 0, 3],
      [0, 2, 3],
      [0, 4, 3],
    ],
  );
  assert.equal(findOccurrences(`require(x) ${'a('.repeat(500_000)}`, 'a', [], 2)[0]!.rank, 1);
});
