import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FileCoordinate } from './coordinates.js';
import { splitLines } from '../wire/encoding.js';
import { AppError } from '../../errors.js';
import { capAnswer, projectLocations as projectPage, type LocationsContext, type LocationsPage, type GroupedLocationsPage } from './projection.js';
import type { Location, LocationLink, Range } from '../wire/lsp-types.js';

const FILES: Record<string, string> = {
  '/src/src/greet.ts': 'import x from "dep";\n\n\nexport function greet(name: string) {\n  return `hi ${name}`;\n}\n',
  '/src/src/app.ts': 'import { greet } from "../greet";\ngreet("a");\ngreet("b");\nconst s = "😀"; greet("c");\n',
  '/src/node_modules/dep/index.d.ts': 'export declare const x: number;\n',
  '/deps/go/pkg/mod/example.com/dep@v1.0.0/greet.go': 'package dep\n\nfunc Greet() {}\n',
  '/etc/passwd': 'root:x:0:0:root:/root:/bin/bash\n',
};

function harness(extra: Partial<LocationsContext> = {}) {
  const reads: string[] = [];
  const ctx: LocationsContext = {
    encoding: 'utf-16',
    serverEncoding: 'utf-16',
    maxLocations: 200,
    readLines: (coord: FileCoordinate, start: number, count: number) => {
      reads.push(`${coord.jailPath}:${start}+${count}`);
      const text = FILES[coord.jailPath];
      return text === undefined ? undefined : splitLines(text).slice(start, start + count);
    },
    readPackageVersion: (dir) => (dir === '/src/node_modules/dep' ? '1.2.3' : undefined),
    ...extra,
  };
  return { ctx, reads };
}

const r = (l: number, c: number, l2 = l, c2 = c + 5): Range => ({ start: { line: l, character: c }, end: { line: l2, character: c2 } });
/** The answer alone (the paging state beside it matters only to capAnswer). */
const projectLocations = async (raw: unknown, ctx: LocationsContext) => (await projectPage(raw, ctx)).answer;
const json = (v: unknown) => JSON.parse(JSON.stringify(v)) as unknown;
const loc = (path: string, range: Range): Location => ({ uri: 'file://' + path, range });

test('a definition in the tree: root-relative path, range, preview', async () => {
  const { ctx } = harness();
  const a = (await projectLocations(loc('/src/src/greet.ts', r(3, 16, 3, 21)), ctx)) as LocationsPage;
  assert.deepEqual(JSON.parse(JSON.stringify(a)), {
    locations: [{ path: 'src/greet.ts', range: r(3, 16, 3, 21), preview: 'export function greet(name: string) {' }],
    total: 1,
    other: 0,
    truncated: false,
  });
});

test('null, empty and garbage results', async () => {
  const { ctx } = harness();
  for (const raw of [null, undefined, []]) {
    assert.deepEqual(json(await projectLocations(raw, ctx)), { locations: [], total: 0, other: 0, truncated: false });
  }
  const a = await projectLocations([42, 'x', { uri: 'file:///src/a.ts' }, { uri: 5, range: r(0, 0) }, null], ctx);
  assert.deepEqual(json(a), { locations: [], total: 0, other: 5, truncated: false });
});

test('LocationLinks land on the target selection range', async () => {
  const { ctx } = harness();
  const link: LocationLink = {
    originSelectionRange: r(1, 0),
    targetUri: 'file:///src/src/greet.ts',
    targetRange: r(3, 0, 5, 1),
    targetSelectionRange: r(3, 16, 3, 21),
  };
  const a = (await projectLocations([link], ctx)) as LocationsPage;
  assert.deepEqual(a.locations[0]?.range, r(3, 16, 3, 21));
});

test('dependencies are external with their coordinate; everything else is counted in other and never read', async () => {
  const { ctx, reads } = harness();
  const a = (await projectLocations(
    [
      loc('/deps/go/pkg/mod/example.com/dep@v1.0.0/greet.go', r(2, 5, 2, 10)),
      loc('/src/node_modules/dep/index.d.ts', r(0, 22, 0, 23)),
      loc('/etc/passwd', r(0, 0)),
      loc('/proc/self/environ', r(0, 0)),
      loc('/src/../etc/passwd', r(0, 0)),
      { uri: 'untitled:Untitled-1', range: r(0, 0) },
      loc('/usr/local/go/src/fmt/print.go', r(10, 0)),
    ],
    ctx,
  )) as LocationsPage;
  assert.equal(a.other, 5);
  assert.equal(a.total, 2);
  assert.deepEqual(a.locations, [
    { external: true, module: 'dep', version: '1.2.3', path: 'index.d.ts', range: r(0, 22, 0, 23), preview: 'export declare const x: number;' },
    { external: true, module: 'example.com/dep', version: 'v1.0.0', path: 'greet.go', range: r(2, 5, 2, 10), preview: 'func Greet() {}' },
  ]);
  assert.ok(
    reads.every((x) => x.startsWith('/src/src/') || x.startsWith('/src/node_modules/') || x.startsWith('/deps/')),
    reads.join(),
  );
  assert.ok(!reads.some((x) => x.includes('passwd') || x.includes('/proc') || x.includes('/usr')));
});

test('duplicates are dropped and the order is stable: tree first, then path, line, character', async () => {
  const { ctx } = harness();
  const raw = [
    loc('/src/src/greet.ts', r(3, 16)),
    loc('/deps/go/pkg/mod/example.com/dep@v1.0.0/greet.go', r(2, 5)),
    loc('/src/src/app.ts', r(2, 0)),
    loc('/src/src/app.ts', r(1, 0)),
    { uri: 'file:///src/src/app.ts', range: r(1, 0) },
    { uri: 'file://localhost/src/src/app.ts', range: r(1, 0) }, // same file, other spelling
    loc('/src/src/app.ts', r(1, 0, 1, 9)),
  ];
  const a = (await projectLocations(raw, ctx)) as LocationsPage;
  assert.deepEqual(
    a.locations.map((l) => `${l.path}:${l.range.start.line}:${l.range.start.character}-${l.range.end.character}`),
    ['src/app.ts:1:0-5', 'src/app.ts:1:0-9', 'src/app.ts:2:0-5', 'src/greet.ts:3:16-21', 'greet.go:2:5-10'],
  );
  assert.equal(a.total, 5);
  // same input in another order: same answer
  const b = (await projectLocations([...raw].reverse(), ctx)) as LocationsPage;
  assert.deepEqual(b, a);
});

test('ranges are converted to the caller encoding using the line text', async () => {
  // line 3 of app.ts: 'const s = "😀"; greet("c");' — greet starts at utf-16 16, utf-8 18, codepoint 15
  const raw = loc('/src/src/app.ts', r(3, 16, 3, 21));
  const u8 = (await projectLocations(raw, harness({ encoding: 'utf-8' }).ctx)) as LocationsPage;
  assert.deepEqual(u8.locations[0]?.range, r(3, 18, 3, 23));
  const cp = (await projectLocations(raw, harness({ encoding: 'codepoint' }).ctx)) as LocationsPage;
  assert.deepEqual(cp.locations[0]?.range, r(3, 15, 3, 20));
  // and from a utf-8 server to a utf-16 caller
  const back = (await projectLocations(loc('/src/src/app.ts', r(3, 18, 3, 23)), harness({ serverEncoding: 'utf-8' }).ctx)) as LocationsPage;
  assert.deepEqual(back.locations[0]?.range, r(3, 16, 3, 21));
  // past the end of the line: clamped
  const far = (await projectLocations(loc('/src/src/app.ts', r(1, 500, 1, 900)), harness().ctx)) as LocationsPage;
  assert.deepEqual(far.locations[0]?.range, r(1, 11, 1, 11));
});

test('hostile numbers in ranges are cleaned', async () => {
  const { ctx } = harness();
  const a = (await projectLocations(
    [
      { uri: 'file:///src/src/app.ts', range: { start: { line: -3, character: 1.5 }, end: { line: 1e12, character: 1e300 } } },
      { uri: 'file:///src/x.ts', range: r(0, Infinity) },
    ],
    ctx,
  )) as LocationsPage;
  assert.equal(a.other, 1); // Infinity is not a number JSON can carry: malformed
  const rg = a.locations[0]!.range;
  assert.deepEqual(rg.start, { line: 0, character: 1 });
  assert.equal(rg.end.line, 1e9);
  assert.ok(Number.isInteger(rg.end.character));
});

test('context: N adds the lines around each location, clipped at the file edges', async () => {
  const { ctx } = harness({ context: 2 });
  const a = (await projectLocations([loc('/src/src/greet.ts', r(3, 16)), loc('/src/src/greet.ts', r(0, 0))], ctx)) as LocationsPage;
  assert.deepEqual(a.locations[0]?.context, { before: [], after: ['', ''] });
  assert.deepEqual(a.locations[1]?.context, { before: ['', ''], after: ['  return `hi ${name}`;', '}'] });
  const end = (await projectLocations(loc('/src/src/greet.ts', r(5, 0)), harness({ context: 3 }).ctx)) as LocationsPage;
  assert.deepEqual(end.locations[0]?.context?.after, ['']); // the empty line after the last newline, then EOF
});

test('an unreadable file gives no preview but still a location', async () => {
  const { ctx } = harness({
    readLines: () => {
      throw new Error('EIO /var/lib/lspd/secret');
    },
  });
  const a = (await projectLocations(loc('/src/src/gone.ts', r(1, 2)), ctx)) as LocationsPage;
  assert.deepEqual(a.locations, [{ path: 'src/gone.ts', range: r(1, 2) }]);
});

test('a very long line gets a windowed preview around the location', async () => {
  const long = 'x'.repeat(10_000) + 'TARGET' + 'y'.repeat(10_000);
  const { ctx } = harness({ readLines: () => [long] });
  const a = (await projectLocations(loc('/src/min.js', r(0, 10_000, 0, 10_006)), ctx)) as LocationsPage;
  const p = a.locations[0]!.preview!;
  assert.ok(p.includes('TARGET') && p.startsWith('…') && p.endsWith('…') && p.length <= 402, p.length.toString());
});

const many = (n: number) => Array.from({ length: n }, (_, i) => loc(`/src/f${String(i % 7).padStart(2, '0')}.ts`, r(i, 0)));

test('maxLocations caps rendering while total stays honest', async () => {
  const { ctx, reads } = harness({ maxLocations: 10 });
  const a = (await projectLocations(many(50), ctx)) as LocationsPage;
  assert.equal(a.locations.length, 10);
  assert.equal(a.total, 50);
  assert.equal(a.truncated, true);
  assert.ok(typeof a.next_cursor === 'string');
  assert.ok(reads.length <= 20, 'lines are read for the page only');
});

test('limit and cursor page through every location exactly once', async () => {
  const raw = many(23);
  const seen: string[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const { ctx } = harness({ limit: 5, cursor, cursorScope: 'q1' });
    const a = (await projectLocations(raw, ctx)) as LocationsPage;
    assert.equal(a.total, 23);
    seen.push(...a.locations.map((l) => `${l.path}:${l.range.start.line}`));
    assert.equal(a.truncated, a.next_cursor !== undefined);
    cursor = a.next_cursor;
    pages++;
  } while (cursor !== undefined && pages < 10);
  assert.equal(pages, 5);
  assert.equal(new Set(seen).size, 23);
  const all = (await projectLocations(raw, harness().ctx)) as LocationsPage;
  assert.deepEqual(
    seen,
    all.locations.map((l) => `${l.path}:${l.range.start.line}`),
  );
});

test('limit never exceeds maxLocations', async () => {
  const a = (await projectLocations(many(30), harness({ limit: 1000, maxLocations: 7 }).ctx)) as LocationsPage;
  assert.equal(a.locations.length, 7);
});

test('bad cursors are a 400 bad_request', async () => {
  const raw = many(12);
  const first = (await projectLocations(raw, harness({ limit: 5, cursorScope: 'q1' }).ctx)) as LocationsPage;
  const good = first.next_cursor!;
  const forged = Buffer.from(JSON.stringify({ v: 1, o: 999 })).toString('base64url');
  const negative = Buffer.from(JSON.stringify({ v: 1, o: -1, s: 'x' })).toString('base64url');
  const extra = Buffer.from(JSON.stringify({ v: 1, o: 1, x: 1 })).toString('base64url');
  const cases: [string, string | undefined][] = [
    ['!!!', 'q1'],
    ['', 'q1'],
    ['e30', 'q1'], // {}
    ['bnVsbA', 'q1'], // null
    ['WzFd', 'q1'], // [1]
    [forged, undefined],
    [negative, 'q1'],
    [extra, undefined],
    [good, 'q2'], // another query's cursor
    [good, undefined],
    ['a'.repeat(201), 'q1'],
  ];
  for (const [cursor, scope] of cases) {
    await assert.rejects(
      projectLocations(raw, harness({ limit: 5, cursor, cursorScope: scope }).ctx),
      (e: unknown) => e instanceof AppError && e.code === 'bad_request' && e.status === 400 && !/\//.test(e.message),
      cursor,
    );
  }
  const next = (await projectLocations(raw, harness({ limit: 5, cursor: good, cursorScope: 'q1' }).ctx)) as LocationsPage;
  assert.equal(next.locations.length, 5);
});

test('grouped: one group per file with its count over all pages', async () => {
  const raw = [
    loc('/src/src/app.ts', r(1, 0)),
    loc('/src/src/app.ts', r(2, 0)),
    loc('/src/src/app.ts', r(3, 16)),
    loc('/src/src/greet.ts', r(3, 16)),
    loc('/src/node_modules/dep/index.d.ts', r(0, 0)),
  ];
  const a = (await projectLocations(raw, harness({ grouped: true }).ctx)) as GroupedLocationsPage;
  assert.deepEqual(
    a.groups.map((g) => [g.path, g.count, g.locations.length, g.external ?? false, g.module]),
    [
      ['src/app.ts', 3, 3, false, undefined],
      ['src/greet.ts', 1, 1, false, undefined],
      ['index.d.ts', 1, 1, true, 'dep'],
    ],
  );
  assert.equal(a.total, 5);
  assert.equal((a as unknown as { locations?: unknown }).locations, undefined);
  const paged = (await projectLocations(raw, harness({ grouped: true, limit: 2 }).ctx)) as GroupedLocationsPage;
  assert.deepEqual(
    paged.groups.map((g) => [g.path, g.count, g.locations.length]),
    [['src/app.ts', 3, 2]],
  );
});

test('capAnswer drops locations from the end, keeps total, and moves the cursor back', async () => {
  const { ctx } = harness({ cursorScope: 'q' });
  const projected = await projectPage(many(100), ctx);
  assert.deepEqual(projected.page, { offset: 0, scope: 'q' });
  const answer = { op: 'references', ...projected.answer } as LocationsPage & { op: string };
  const full = JSON.stringify(answer).length;
  assert.equal(capAnswer(answer, full + 10), answer);
  const capped = capAnswer(answer, 2048, projected.page);
  assert.ok(Buffer.byteLength(JSON.stringify(capped)) <= 2048);
  assert.ok(capped.locations.length > 0 && capped.locations.length < 100);
  assert.equal(capped.total, 100);
  assert.equal(capped.truncated, true);
  assert.equal(capped.op, 'references');
  // the next page starts right after the last kept location
  const next = (await projectLocations(many(100), harness({ cursor: capped.next_cursor, cursorScope: 'q' }).ctx)) as LocationsPage;
  assert.deepEqual(next.locations[0], answer.locations[capped.locations.length]);
});

test('capAnswer on grouped answers, symbols, hover text', async () => {
  const projected = await projectPage(many(100), harness({ grouped: true }).ctx);
  const grouped = projected.answer as GroupedLocationsPage;
  const g = capAnswer(grouped, 1500, projected.page);
  assert.ok(g.next_cursor, 'the dropped locations are the next page');
  assert.ok(Buffer.byteLength(JSON.stringify(g)) <= 1500);
  assert.ok(g.groups.length >= 1 && g.groups.every((x) => x.locations.length > 0));
  assert.equal(g.groups[0]!.count, grouped.groups[0]!.count);
  const symbols = { symbols: Array.from({ length: 500 }, (_, i) => ({ name: 's' + i })), total: 500, truncated: false };
  const s = capAnswer(symbols, 1024);
  assert.ok(s.symbols.length < 500 && s.truncated && s.total === 500);
  assert.ok(!('next_cursor' in s));
  const hover = { contents: '€'.repeat(5000) + '😀'.repeat(5000), truncated: false };
  const h = capAnswer(hover, 4096);
  assert.ok(Buffer.byteLength(JSON.stringify(h)) <= 4096 && h.truncated && h.contents.length > 1000);
  assert.ok(!h.contents.includes('\ufffd'));
  const opaque = { blob: 'x'.repeat(5000) };
  assert.equal(capAnswer(opaque, 1024), opaque); // nothing it knows how to cut
});
