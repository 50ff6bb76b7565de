import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  convertCharacter,
  convertPosition,
  convertRange,
  encodingFromLsp,
  encodingToLsp,
  fromUtf16Index,
  splitLines,
  toUtf16Index,
  truncateUtf8,
  utf8Length,
  type Encoding,
} from './encoding.js';

// "a" (1/1/1) "é" (1 unit, 2 bytes) "中" (1 unit, 3 bytes) "😀" (2 units, 4 bytes, 1 cp) "b"
const MIXED = 'aé中😀b';
const ENCODINGS: Encoding[] = ['utf-16', 'utf-8', 'codepoint'];

test('ASCII lines are the identity in every encoding', () => {
  for (const from of ENCODINGS)
    for (const to of ENCODINGS) {
      for (let c = 0; c <= 5; c++) assert.equal(convertCharacter('hello', c, from, to), c);
    }
});

test('boundaries of a mixed line in each encoding', () => {
  // character boundaries as [utf-16, utf-8, codepoint]
  const bounds: [number, number, number][] = [
    [0, 0, 0], // before a
    [1, 1, 1], // before é
    [2, 3, 2], // before 中
    [3, 6, 3], // before 😀
    [5, 10, 4], // before b
    [6, 11, 5], // end
  ];
  for (const b of bounds) {
    for (const [i, from] of ENCODINGS.entries())
      for (const [j, to] of ENCODINGS.entries()) {
        assert.equal(convertCharacter(MIXED, b[i]!, from, to), b[j], `${from} ${b[i]} -> ${to}`);
      }
  }
});

test('a utf-16 offset between the halves of a surrogate pair snaps to a boundary', () => {
  assert.equal(toUtf16Index(MIXED, 4, 'utf-16', 'floor'), 3);
  assert.equal(toUtf16Index(MIXED, 4, 'utf-16', 'ceil'), 5);
  assert.equal(convertCharacter(MIXED, 4, 'utf-16', 'utf-8'), 6);
  assert.equal(convertCharacter(MIXED, 4, 'utf-16', 'utf-8', 'ceil'), 10);
  // and going out to utf-16 from an index in the middle of a pair
  assert.equal(fromUtf16Index(MIXED, 4, 'utf-16'), 3);
  assert.equal(fromUtf16Index(MIXED, 4, 'codepoint'), 3);
});

test('a utf-8 offset inside a multi-byte sequence snaps to a boundary', () => {
  for (const inside of [7, 8, 9]) {
    assert.equal(convertCharacter(MIXED, inside, 'utf-8', 'utf-16', 'floor'), 3);
    assert.equal(convertCharacter(MIXED, inside, 'utf-8', 'utf-16', 'ceil'), 5);
  }
  assert.equal(convertCharacter(MIXED, 2, 'utf-8', 'codepoint'), 1); // inside é
  assert.equal(convertCharacter(MIXED, 2, 'utf-8', 'codepoint', 'ceil'), 2);
});

test('positions past the end clamp to the line length, in the target unit', () => {
  assert.equal(convertCharacter(MIXED, 99, 'utf-16', 'utf-16'), 6);
  assert.equal(convertCharacter(MIXED, 99, 'utf-16', 'utf-8'), 11);
  assert.equal(convertCharacter(MIXED, 99, 'utf-8', 'codepoint'), 5);
  assert.equal(convertCharacter(MIXED, 7, 'codepoint', 'utf-16'), 6);
  assert.equal(convertCharacter('', 3, 'utf-8', 'utf-16'), 0);
  assert.equal(convertCharacter('abc', Infinity, 'utf-16', 'utf-8'), 3);
});

test('hostile characters: negative, NaN, fractional, non-numbers', () => {
  assert.equal(convertCharacter(MIXED, -5, 'utf-16', 'utf-8'), 0);
  assert.equal(convertCharacter(MIXED, NaN, 'utf-8', 'utf-16'), 0);
  assert.equal(convertCharacter(MIXED, 2.7, 'utf-16', 'utf-8'), 3);
  assert.equal(convertCharacter(MIXED, '3' as unknown as number, 'utf-16', 'utf-8'), 0);
  assert.deepEqual(convertPosition({ line: -1, character: -1 }, 'x', 'utf-16', 'utf-8'), { line: 0, character: 0 });
});

test('astral-only and combining text', () => {
  const astral = '𝒳𝒴𝒵'; // 3 code points, 6 units, 12 bytes
  assert.equal(convertCharacter(astral, 2, 'codepoint', 'utf-16'), 4);
  assert.equal(convertCharacter(astral, 2, 'codepoint', 'utf-8'), 8);
  assert.equal(convertCharacter(astral, 8, 'utf-8', 'codepoint'), 2);
  // combining marks are code points of their own; we count units, not graphemes
  const combining = 'e\u0301x';
  assert.equal(convertCharacter(combining, 2, 'utf-16', 'utf-8'), 3);
  assert.equal(convertCharacter(combining, 2, 'utf-16', 'codepoint'), 2);
});

test('lone surrogates count as U+FFFD (3 bytes), consistently with Buffer', () => {
  const lone = 'a\ud800b\udc00c';
  assert.equal(convertCharacter(lone, 2, 'utf-16', 'utf-8'), 4);
  assert.equal(convertCharacter(lone, 5, 'utf-16', 'utf-8'), utf8Length(lone));
  assert.equal(convertCharacter(lone, 4, 'utf-8', 'utf-16'), 2);
  assert.equal(convertCharacter(lone, 4, 'codepoint', 'utf-16'), 4);
});

test('round trips on every boundary of a long mixed line', () => {
  const line = 'x = "héllo 世界 🎉🎉" + y; // ñ'.repeat(20);
  for (let i = 0; i <= line.length; i++) {
    if (i > 0 && i < line.length && line.charCodeAt(i) >= 0xdc00 && line.charCodeAt(i) <= 0xdfff) continue;
    for (const e of ENCODINGS) {
      const c = fromUtf16Index(line, i, e);
      assert.equal(toUtf16Index(line, c, e), i, `${e} @${i}`);
    }
  }
});

test('convertRange snaps the start down and the end up, and repairs inverted ranges', () => {
  const lines = ['😀😀', 'abc'];
  const at = (n: number) => lines[n];
  /** A range from (line, character) to (line, character). */
  const range = (sl: number, sc: number, el: number, ec: number) => ({ start: { line: sl, character: sc }, end: { line: el, character: ec } });
  const cases: [string, ReturnType<typeof range>, Encoding, ReturnType<typeof range>][] = [
    ['inside surrogate pairs: start down, end up', range(0, 1, 0, 3), 'codepoint', range(0, 0, 0, 2)],
    ['inverted: the end moves up to the start', range(1, 2, 0, 0), 'utf-8', range(1, 2, 1, 2)],
    ['unknown line text: passes through, sanitized', range(7, 4, 7, 9.5), 'utf-8', range(7, 4, 7, 9)],
    ['multi-line: each end converted on its own line', range(0, 2, 1, 3), 'utf-8', range(0, 4, 1, 3)],
  ];
  for (const [why, from, to, want] of cases) assert.deepEqual(convertRange(from, at, 'utf-16', to), want, why);
});

test('LSP encoding names', () => {
  assert.equal(encodingFromLsp('utf-8'), 'utf-8');
  assert.equal(encodingFromLsp('utf-32'), 'codepoint');
  assert.equal(encodingFromLsp('utf-16'), 'utf-16');
  assert.equal(encodingFromLsp(undefined), 'utf-16');
  assert.equal(encodingFromLsp('latin1'), 'utf-16');
  assert.equal(encodingToLsp('codepoint'), 'utf-32');
  assert.equal(encodingToLsp('utf-8'), 'utf-8');
});

test('splitLines treats \\n, \\r\\n and \\r as terminators', () => {
  assert.deepEqual(splitLines('a\nb\r\nc\rd'), ['a', 'b', 'c', 'd']);
  assert.deepEqual(splitLines('a\n'), ['a', '']);
  assert.deepEqual(splitLines(''), ['']);
});

test('truncateUtf8 cuts on a character boundary', () => {
  assert.equal(truncateUtf8('abc', 10), 'abc');
  assert.equal(truncateUtf8('abc', 2), 'ab');
  assert.equal(truncateUtf8('a😀', 4), 'a'); // the emoji needs 4 bytes, only 3 left
  assert.equal(truncateUtf8('a😀', 5), 'a😀');
  assert.equal(truncateUtf8('中中', 5), '中');
  assert.equal(truncateUtf8('x', 0), '');
  assert.equal(truncateUtf8('x', -3), '');
  const big = '€'.repeat(100_000);
  const cut = truncateUtf8(big, 65_536);
  assert.ok(utf8Length(cut) <= 65_536 && utf8Length(cut) > 65_530);
  assert.ok(!cut.includes('\ufffd'));
});

test('a 2 MiB line converts in linear time (completes)', () => {
  const line = '😀a'.repeat(700_000);
  assert.equal(convertCharacter(line, line.length, 'utf-16', 'utf-8'), 700_000 * 5);
  assert.equal(convertCharacter(line, 700_000 * 5 - 1, 'utf-8', 'codepoint'), 1_399_999);
});

test('a utf-16 offset moves only from the middle of a pair, whatever else the line holds', () => {
  const line = 'a\ud83d\ude00b\ud800c\udc00\ud83d\ude00é€';
  // A boundary is any index but the one between a high surrogate and the low one after it.
  const inside = (i: number) => i > 0 && i < line.length && /[\udc00-\udfff]/.test(line[i]!) && /[\ud800-\udbff]/.test(line[i - 1]!);
  for (let k = 0; k <= line.length + 2; k++) {
    const at = Math.min(k, line.length);
    assert.equal(toUtf16Index(line, k, 'utf-16', 'floor'), inside(at) ? at - 1 : at, `floor ${k}`);
    assert.equal(toUtf16Index(line, k, 'utf-16', 'ceil'), inside(at) ? at + 1 : at, `ceil ${k}`);
  }
});
