import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FileCoordinate, TreeCoordinate } from './coordinates.js';
import { splitLines, utf8Length } from '../wire/encoding.js';
import { projectDiagnostics, projectHover, projectSymbols, type HoverContext, type SymbolsContext } from './projection.js';
import type { DocumentSymbol, Range, SymbolInformation } from '../wire/lsp-types.js';
import { createScrubber } from './scrub.js';

const FILES: Record<string, string> = {
  '/src/app.ts': 'class Server {\n  close() {}\n  /* 😀 */ open() {}\n}\nfunction close() {}\n',
  '/src/node_modules/dep/index.d.ts': 'export declare function greet(): void;\n',
};
const doc: TreeCoordinate = { kind: 'tree', path: 'app.ts', jailPath: '/src/app.ts' };
const r = (l: number, c: number, l2 = l, c2 = c + 5): Range => ({ start: { line: l, character: c }, end: { line: l2, character: c2 } });

function base() {
  const reads: string[] = [];
  return {
    reads,
    ctx: {
      encoding: 'utf-16' as const,
      serverEncoding: 'utf-16' as const,
      readLines: (coord: FileCoordinate, start: number, count: number) => {
        reads.push(coord.jailPath);
        const t = FILES[coord.jailPath];
        return t === undefined ? undefined : splitLines(t).slice(start, start + count);
      },
      readPackageVersion: (dir: string) => (dir === '/src/node_modules/dep' ? '1.0.0' : undefined),
      scrub: createScrubber({ knownPaths: ['/var/lib/lspd'] }),
    },
  };
}
const hoverCtx = (extra: Partial<HoverContext> = {}): HoverContext => ({ ...base().ctx, document: doc, maxHoverBytes: 64 * 1024, ...extra });

test('hover: MarkupContent, MarkedString and MarkedString[]', async () => {
  assert.deepEqual(await projectHover({ contents: { kind: 'markdown', value: '**greet**' } }, hoverCtx()), { contents: '**greet**', truncated: false });
  assert.deepEqual(await projectHover({ contents: { kind: 'plaintext', value: 'x: int' } }, hoverCtx()), { contents: 'x: int', truncated: false });
  assert.deepEqual(await projectHover({ contents: 'plain *md*' }, hoverCtx()), { contents: 'plain *md*', truncated: false });
  assert.deepEqual(await projectHover({ contents: { language: 'python', value: 'def f(): ...' } }, hoverCtx()), {
    contents: '```python\ndef f(): ...\n```',
    truncated: false,
  });
  const arr = await projectHover({ contents: [{ language: 'ts', value: 'const x: 1' }, '', 'Docs here.'] }, hoverCtx());
  assert.equal(arr.contents, '```ts\nconst x: 1\n```\n\nDocs here.');
});

test('hover: null, garbage and empty shapes give empty contents', async () => {
  for (const raw of [null, undefined, 42, 'str', [], {}, { contents: 5 }, { contents: [null, 3, { value: 1 }] }, { contents: { language: 1, value: 'x' } }]) {
    assert.deepEqual(await projectHover(raw, hoverCtx()), { contents: '', truncated: false }, JSON.stringify(raw));
  }
});

test('hover: a code block cannot be closed early by server text; the language tag is sanitized', async () => {
  const a = await projectHover({ contents: { language: 'ts\n# injected', value: 'a ```` b' } }, hoverCtx());
  assert.equal(a.contents, '`````ts#injected\na ```` b\n`````');
});

test('hover: host paths and file URIs are scrubbed, documentation URLs kept', async () => {
  const a = await projectHover(
    {
      contents: {
        kind: 'markdown',
        value:
          '```ts\nimport("/src/lib/x")\n```\nDefined in [x.ts](file:///src/lib/x.ts#L3). ' +
          'Cache at /var/lib/lspd/roots/a and file:///etc/passwd and /proc/self/environ and %2Fhome%2Falice. ' +
          'See https://www.typescriptlang.org/docs/handbook/modules.html',
      },
    },
    hoverCtx(),
  );
  assert.equal(
    a.contents,
    '```ts\nimport("lib/x")\n```\nDefined in [x.ts](lib/x.ts#L3). Cache at <path> and <path> and <path> and <path>. ' +
      'See https://www.typescriptlang.org/docs/handbook/modules.html',
  );
});

test('hover: capped at maxHoverBytes on a UTF-8 boundary', async () => {
  const big = '😀'.repeat(100_000);
  const a = await projectHover({ contents: big }, hoverCtx({ maxHoverBytes: 1001 }));
  assert.equal(a.truncated, true);
  assert.ok(utf8Length(a.contents) <= 1001);
  assert.equal(a.contents, '😀'.repeat(250));
  const huge = '/home/alice/secret '.repeat(50_000);
  const h = await projectHover({ contents: huge }, hoverCtx({ maxHoverBytes: 4096 }));
  assert.ok(h.truncated && !h.contents.includes('alice'));
});

test('hover: range converted in the document', async () => {
  const a = await projectHover({ contents: 'x', range: r(2, 11, 2, 15) }, hoverCtx({ encoding: 'utf-8' }));
  assert.deepEqual(a.range, r(2, 13, 2, 17)); // past "  /* 😀 */ " the emoji is 2 units, 4 bytes
  const bad = await projectHover({ contents: 'x', range: { start: 1 } }, hoverCtx());
  assert.equal(bad.range, undefined);
});

const symCtx = (extra: Partial<SymbolsContext> = {}): SymbolsContext => ({ ...base().ctx, maxLocations: 200, document: doc, ...extra });
const tree: DocumentSymbol[] = [
  {
    name: 'Server',
    kind: 5,
    range: r(0, 0, 3, 1),
    selectionRange: r(0, 6, 0, 12),
    children: [
      { name: 'close', kind: 6, range: r(1, 2, 1, 12), selectionRange: r(1, 2, 1, 7) },
      { name: 'open', kind: 6, range: r(2, 11, 2, 20), selectionRange: r(2, 11, 2, 15) },
    ],
  },
  { name: 'close', kind: 12, range: r(4, 0, 4, 19), selectionRange: r(4, 9, 4, 14) },
];

test('document symbols are flattened in document order with their container chain', async () => {
  const a = await projectSymbols(tree, symCtx());
  assert.deepEqual(
    a.symbols.map((s) => [s.name, s.kind, s.container ?? null, s.path]),
    [
      ['Server', 'class', null, 'app.ts'],
      ['close', 'method', 'Server', 'app.ts'],
      ['open', 'method', 'Server', 'app.ts'],
      ['close', 'function', null, 'app.ts'],
    ],
  );
  assert.deepEqual(a.symbols[1]?.range, r(1, 2, 1, 12));
  assert.deepEqual(a.symbols[1]?.selectionRange, r(1, 2, 1, 7));
  assert.equal(a.total, 4);
  assert.equal(a.truncated, false);
});

test('symbol query: case-insensitive substring, and qualified names by container', async () => {
  assert.deepEqual(
    (await projectSymbols(tree, symCtx({ query: 'CLOSE' }))).symbols.map((s) => s.kind),
    ['method', 'function'],
  );
  assert.deepEqual(
    (await projectSymbols(tree, symCtx({ query: 'server.close' }))).symbols.map((s) => s.kind),
    ['method'],
  );
  assert.equal((await projectSymbols(tree, symCtx({ query: 'nothing' }))).total, 0);
});

test('symbol ranges are converted to the caller encoding', async () => {
  const a = await projectSymbols(tree, symCtx({ encoding: 'codepoint', query: 'open' }));
  assert.deepEqual(a.symbols[0]?.selectionRange, r(2, 10, 2, 14));
});

test('SymbolInformation and WorkspaceSymbol: tree, external, other', async () => {
  const infos: (SymbolInformation | { name: string; kind: number; location: { uri: string } })[] = [
    { name: 'greet', kind: 12, location: { uri: 'file:///src/node_modules/dep/index.d.ts', range: r(0, 24, 0, 29) }, containerName: '"dep"' },
    { name: 'close', kind: 12, location: { uri: 'file:///src/app.ts', range: r(4, 9, 4, 14) } },
    { name: 'print', kind: 12, location: { uri: 'file:///usr/lib/go/src/fmt/print.go', range: r(0, 0) } },
    { name: 'lazy', kind: 13, location: { uri: 'file:///src/app.ts' } },
    { name: 'x', kind: 99, location: { uri: 'file:///etc/passwd', range: r(0, 0) } },
  ];
  const { ctx, reads } = base();
  const a = await projectSymbols(infos, { ...ctx, maxLocations: 200 });
  assert.equal(a.other, 2);
  assert.equal(a.total, 3);
  assert.deepEqual(a.symbols[0], {
    name: 'greet',
    kind: 'function',
    path: 'index.d.ts',
    external: true,
    module: 'dep',
    version: '1.0.0',
    range: r(0, 24, 0, 29),
    container: '"dep"',
  });
  assert.deepEqual(a.symbols[2], { name: 'lazy', kind: 'variable', path: 'app.ts' });
  assert.ok(!reads.some((p) => p.includes('passwd') || p.includes('/usr/')));
});

test('symbols: hostile trees (deep, wide, malformed) are bounded and survive', async () => {
  let deep: DocumentSymbol = { name: 'leaf', kind: 13, range: r(0, 0), selectionRange: r(0, 0) };
  for (let i = 0; i < 10_000; i++) deep = { name: 'n' + i, kind: 3, range: r(0, 0), selectionRange: r(0, 0), children: [deep] };
  const a = await projectSymbols([deep], symCtx({ maxLocations: 1_000_000 }));
  assert.equal(a.total, 64);
  const wide = Array.from({ length: 300 }, (_, i) => ({ name: 's' + i, kind: 13, range: r(i, 0), selectionRange: r(i, 0) }));
  const w = await projectSymbols([...wide, null, 5, { name: 1 }, { name: 'norange', kind: 1 }], symCtx());
  assert.equal(w.total, 300);
  assert.equal(w.symbols.length, 200);
  assert.equal(w.truncated, true);
  assert.deepEqual(await projectSymbols(null, symCtx()), { symbols: [], total: 0, other: 0, truncated: false });
  // a document symbol with no document to put it in is other
  const nodoc = await projectSymbols(tree, { ...symCtx(), document: undefined });
  assert.equal(nodoc.other, 4);
});

test('symbol names and containers are scrubbed', async () => {
  const a = await projectSymbols(
    [
      {
        name: '"/home/alice/x.ts"',
        kind: 2,
        range: r(0, 0),
        selectionRange: r(0, 0),
        children: [{ name: 'y', kind: 13, range: r(0, 0), selectionRange: r(0, 0) }],
      },
    ],
    symCtx(),
  );
  assert.deepEqual(
    a.symbols.map((s) => [s.name, s.container ?? null]),
    [
      ['"<path>"', null],
      ['y', '"<path>"'],
    ],
  );
});

const diagCtx = () => ({ ...base().ctx, document: doc, maxLocations: 3 });

test('diagnostics: severity names, code, source, scrubbed message, sorted', async () => {
  const raw = [
    { range: r(4, 9, 4, 14), severity: 2, code: 6133, source: 'ts', message: "'close' is declared but never used." },
    { range: r(0, 6, 0, 12), severity: 1, code: 'E1', source: 'pyright', message: 'Cannot find module /home/alice/x or file:///var/lib/lspd/a' },
    { range: r(1, 2), message: 'no severity' },
  ];
  const a = await projectDiagnostics(raw, diagCtx());
  assert.deepEqual(a, {
    diagnostics: [
      { range: r(0, 6, 0, 12), severity: 'error', code: 'E1', source: 'pyright', message: 'Cannot find module <path> or <path>' },
      { range: r(1, 2), severity: 'error', message: 'no severity' },
      { range: r(4, 9, 4, 14), severity: 'warning', code: 6133, source: 'ts', message: "'close' is declared but never used." },
    ],
    total: 3,
    truncated: false,
  });
  const sevs = await projectDiagnostics(
    [1, 2, 3, 4, 0, 9].map((severity) => ({ range: r(0, 0), severity, message: 'm' })),
    { ...diagCtx(), maxLocations: 10 },
  );
  assert.deepEqual(
    sevs.diagnostics.map((d) => d.severity),
    ['error', 'warning', 'information', 'hint', 'error', 'error'],
  );
});

test('diagnostics: pull reports, garbage, caps', async () => {
  const full = await projectDiagnostics({ kind: 'full', items: [{ range: r(0, 0), message: 'x', severity: 3 }] }, diagCtx());
  assert.equal(full.diagnostics[0]?.severity, 'information');
  assert.deepEqual(await projectDiagnostics({ kind: 'unchanged', resultId: '1' }, diagCtx()), { diagnostics: [], total: 0, truncated: false });
  assert.deepEqual(await projectDiagnostics(null, diagCtx()), { diagnostics: [], total: 0, truncated: false });
  const junk = await projectDiagnostics([null, { message: 'no range' }, { range: r(0, 0) }, { range: r(0, 0), message: 'ok', code: { x: 1 } }], diagCtx());
  assert.deepEqual(junk.diagnostics, [{ range: r(0, 0), severity: 'error', message: 'ok' }]);
  const many = await projectDiagnostics(
    Array.from({ length: 10 }, (_, i) => ({ range: r(i, 0), message: 'm'.repeat(20_000) })),
    diagCtx(),
  );
  assert.equal(many.diagnostics.length, 3);
  assert.equal(many.total, 10);
  assert.equal(many.truncated, true);
  assert.ok(many.diagnostics.every((d) => utf8Length(d.message) <= 8192));
});
