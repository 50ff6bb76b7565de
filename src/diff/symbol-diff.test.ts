import { test } from 'node:test';
import assert from 'node:assert/strict';
import { changedBaseLines, diffSymbols, newDiagnostics, outsideChange, type DocSymbol } from './symbol-diff.js';

const r = (sl: number, sc: number, el: number, ec: number) => ({ start: { line: sl, character: sc }, end: { line: el, character: ec } });

test('changed base lines: an edited line, a removed line, an insertion changes none', () => {
  assert.deepEqual([...changedBaseLines('a\nb\nc\nd', 'a\nB\nc\nd')], [1]);
  assert.deepEqual([...changedBaseLines('a\nb\nc\nd', 'a\nc\nd')], [1]);
  assert.deepEqual([...changedBaseLines('a\nb\nc', 'a\nx\ny\nb\nc')], []);
  assert.deepEqual([...changedBaseLines('x\na\ny\nb', 'a\nb\nz')].sort(), [0, 2]);
  assert.deepEqual([...changedBaseLines('same', 'same')], []);
});

const baseText = [
  'export function f(a: number) {', // 0
  '  return a + 1;', // 1
  '}', // 2
  'export class C {', // 3
  '  m() { return 1; }', // 4
  '  n() { return 2; }', // 5
  '}', // 6
  'export function gone() {}', // 7
].join('\n');
const baseSyms: DocSymbol[] = [
  { name: 'f', kind: 'Function', range: r(0, 0, 2, 1), selectionRange: r(0, 16, 0, 17) },
  { name: 'C', kind: 'Class', range: r(3, 0, 6, 1), selectionRange: r(3, 13, 3, 14) },
  { name: 'm', kind: 'Method', container: 'C', range: r(4, 2, 4, 20) },
  { name: 'n', kind: 'Method', container: 'C', range: r(5, 2, 5, 20) },
  { name: 'gone', kind: 'Function', range: r(7, 0, 7, 25) },
];

test('symbols: a new parameter is a changed signature, a method body change leaves its class unchanged, moves are not changes', () => {
  const headText = [
    '// a new first line shifts everything',
    'export function f(a: number, b: number) {',
    '  return a + 1;',
    '}',
    'export class C {',
    '  m() { return 1; }',
    '  n() { return 3; }',
    '}',
    'export function added() {}',
  ].join('\n');
  const headSyms: DocSymbol[] = [
    { name: 'f', kind: 'Function', range: r(1, 0, 3, 1) },
    { name: 'C', kind: 'Class', range: r(4, 0, 7, 1) },
    { name: 'm', kind: 'Method', container: 'C', range: r(5, 2, 5, 20) },
    { name: 'n', kind: 'Method', container: 'C', range: r(6, 2, 6, 20) },
    { name: 'added', kind: 'Function', range: r(8, 0, 8, 26) },
  ];
  const d = diffSymbols('src/a.ts', { text: baseText, symbols: baseSyms }, { text: headText, symbols: headSyms });
  assert.deepEqual(
    d.map((c) => [c.qualified, c.change, c.signature_changed ?? null]),
    [
      ['f', 'changed', true],
      ['C.n', 'changed', false],
      ['gone', 'removed', null],
      ['added', 'added', null],
    ],
  );
  assert.equal(d[0]!.base!.signature, 'export function f(a: number)');
  assert.equal(d[0]!.head!.signature, 'export function f(a: number, b: number)');
  assert.deepEqual(d[0]!.base!.selectionRange, r(0, 16, 0, 17));
});

test('symbols: a file absent at head removes all; overloads pair in order', () => {
  assert.deepEqual(
    diffSymbols('x.ts', { text: baseText, symbols: baseSyms }, undefined).map((c) => c.change),
    ['removed', 'removed', 'removed', 'removed', 'removed'],
  );
  const text = 'function o(a: string): void;\nfunction o(a: number): void;';
  const syms: DocSymbol[] = [
    { name: 'o', kind: 'Function', range: r(0, 0, 0, 28) },
    { name: 'o', kind: 'Function', range: r(1, 0, 1, 28) },
  ];
  const head = 'function o(a: string): void;\nfunction o(a: bigint): void;';
  assert.deepEqual(
    diffSymbols('o.ts', { text, symbols: syms }, { text: head, symbols: syms }).map((c) => [c.qualified, c.change, c.base!.range.start.line]),
    [['o', 'changed', 1]],
  );
});

test('references outside the change: dependency, removed-file and rewritten-line references are left out', () => {
  const locs = [
    { path: 'a.ts', range: r(1, 0, 1, 1) },
    { path: 'a.ts', range: r(5, 0, 5, 1) },
    { path: 'b.ts', range: r(1, 0, 1, 1) },
    { path: 'gone.ts', range: r(0, 0, 0, 1) },
    { path: 'node_modules/x/index.d.ts', range: r(0, 0, 0, 1), external: true },
  ];
  const kept = outsideChange(locs, new Map([['a.ts', new Set([1, 2])]]), new Set(['gone.ts']));
  assert.deepEqual(
    kept.map((l) => `${l.path}:${l.range.start.line}`),
    ['a.ts:5', 'b.ts:1'],
  );
});

test('new diagnostics: matched by file, message and code, not line, and counted', () => {
  const e = (path: string, line: number, message: string, code?: number) => ({ path, range: r(line, 0, line, 1), message, ...(code ? { code } : {}) });
  const base = [e('a.ts', 3, 'old', 1), e('b.ts', 0, 'dup', 2)];
  const head = [e('a.ts', 9, 'old', 1), e('b.ts', 1, 'dup', 2), e('b.ts', 2, 'dup', 2), e('a.ts', 3, 'old', 7), e('c.ts', 0, 'old', 1)];
  assert.deepEqual(
    newDiagnostics(head, base).map((d) => `${d.path}:${String(d.code)}`),
    ['b.ts:2', 'a.ts:7', 'c.ts:1'],
  );
});
