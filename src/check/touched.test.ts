// Which declarations a patch touches (src/check/touched.ts): the ranges are TS 7's
// document symbols of the text below, written out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { touchedDeclarations } from './touched.js';

const r = (sl: number, sc: number, el: number, ec: number) => ({ range: { start: { line: sl, character: sc }, end: { line: el, character: ec } } });
const old = [
  "import { x } from './x.js';", // 0
  '', // 1
  'export function a(n: number): number {', // 2
  '  return n + x;', // 3
  '}', // 4
  '', // 5
  "export const b: string = 'b';", // 6
  '', // 7
  'export class C {', // 8
  '  m(): void {}', // 9
  '}', // 10
  '',
].join('\n');
// a: the function with `export`; b: the variable's declarator only (TS 7 leaves out `export const` and `;`); C: the class.
const decls = [r(2, 0, 4, 1), r(6, 13, 6, 28), r(8, 0, 10, 1)];
const touched = (text: string) => {
  const t = touchedDeclarations(old, text, decls);
  return t === 'all' ? t : [...t].sort();
};

test('a change inside one declaration touches that one only', () => {
  assert.deepEqual(touched(old.replace('a(n: number)', 'a(n: number, m: number)')), [0]);
  assert.deepEqual(touched(old.replace('return n + x;', 'return n + x + 1;')), [0]);
  assert.deepEqual(touched(old.replace('export function a', 'function a')), [0], 'its range holds `export`: its users are asked');
  assert.deepEqual(touched(old.replace("b: string = 'b'", 'b: number = 1')), [1]);
  assert.deepEqual(touched(old.replace('  m(): void {}', '  m(): void {}\n  k(): void {}')), [2], 'a line inserted inside the class');
  assert.deepEqual(touched(old.replace("b: string = 'b'", 'b: number = 1').replace('m(): void', 'm(): number')), [1, 2]);
});

test('blank lines between declarations are no change', () => {
  assert.deepEqual(touched(old.replace('}\n\nexport const', '}\n\n\n\nexport const')), []);
  assert.deepEqual(touched(old.replace('}\n\nexport const', '}\nexport const')), []);
});

test('anything outside every declaration touches them all', () => {
  assert.equal(touched(old.replace("from './x.js'", "from './y.js'")), 'all', 'an import');
  assert.equal(touched(old.replace('export const b', 'const b')), 'all', '`export` taken off a variable');
  assert.equal(touched(old + 'export { a as aa };\n'), 'all', 'an export list added');
  assert.equal(touched(old.replace('export class C', '/** doc */\nexport class C')), 'all', 'a line inserted before a declaration');
  assert.equal(touchedDeclarations(old, old.replace('a(n', 'a(m'), [{}, ...decls]), 'all', 'a symbol without a range');
});
