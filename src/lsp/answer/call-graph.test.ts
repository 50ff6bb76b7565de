// The call-graph projection on canned server output: what it does with items a
// server should not send (outside the tree, malformed, host paths in names), how many
// requests a graph costs (a diamond is asked about once, a cycle never again, nothing
// past the budget), and that the size cap drops the deepest nodes first. What real
// servers answer is test/lsp-call-graph.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FileCoordinate } from './coordinates.js';
import { splitLines } from '../wire/encoding.js';
import type { Range } from '../wire/lsp-types.js';
import { projectGraph, type GraphContext, type GraphNode } from './call-graph.js';
import { capAnswer } from './projection.js';
import { createScrubber } from './scrub.js';

const FILES: Record<string, string> = {
  '/src/a.ts': 'function a() {\n  b(); c();\n}\nfunction b() {\n  d();\n}\nfunction c() {\n  d(); d();\n}\nfunction d() {\n  a();\n}\n',
  '/src/node_modules/dep/index.d.ts': 'export declare function e(): void;\n',
};

const r = (l: number, c = 9, len = 1): Range => ({ start: { line: l, character: c }, end: { line: l, character: c + len } });
const item = (name: string, line: number, uri = 'file:///src/a.ts') => ({
  name,
  kind: 12,
  uri,
  range: { start: { line, character: 0 }, end: { line: line + 2, character: 1 } },
  selectionRange: r(line),
  data: { id: name },
});
const A = item('a', 0);
const B = item('b', 3);
const C = item('c', 6);
const D = item('d', 9);
/** Outgoing calls: a → b, c; b → d; c → d (twice); d → a (a cycle), e (a dependency), and a toolchain file. */
const OUT: Record<string, unknown> = {
  a: [
    { to: B, fromRanges: [r(1, 2)] },
    { to: C, fromRanges: [r(1, 7)] },
  ],
  b: [{ to: D, fromRanges: [r(4, 2)] }],
  c: [{ to: D, fromRanges: [r(7, 2), r(7, 7)] }],
  d: [
    { to: A, fromRanges: [r(10, 2)] },
    { to: item('e', 0, 'file:///src/node_modules/dep/index.d.ts'), fromRanges: [r(10, 2)] },
    { to: item('setTimeout', 0, 'file:///usr/lib/node/lib.dom.d.ts'), fromRanges: [r(10, 2)] },
    { to: { name: 'broken' } },
  ],
};

function harness(extra: Partial<GraphContext> = {}) {
  const asked: string[] = [];
  const ctx: GraphContext = {
    encoding: 'utf-16',
    serverEncoding: 'utf-16',
    readLines: (coord: FileCoordinate, start: number, count: number) => {
      const text = FILES[coord.jailPath];
      return text === undefined ? undefined : splitLines(text).slice(start, start + count);
    },
    readPackageVersion: (dir) => (dir === '/src/node_modules/dep' ? '1.0.0' : undefined),
    shape: 'outgoing',
    depth: 3,
    maxNodes: 200,
    scrub: createScrubber({ knownPaths: ['/home/secret'] }),
    expand: async (x) => {
      const it = x as { name: string; data: { id: string } };
      // The server's own item comes back to it as it was sent, `data` and all.
      assert.equal(it.data.id, it.name);
      asked.push(it.name);
      return OUT[it.name] ?? [];
    },
    ...extra,
  };
  return { ctx, asked };
}

const fmt = (n: GraphNode) => `${n.depth} ${n.parent ?? '-'} ${n.name}${n.external ? `@${n.module}@${n.version}` : ''}${n.cycle ? ' cycle' : ''}`;

test('outgoing calls, depth 3: breadth first, a diamond asked once, the cycle cut, outside items counted', async () => {
  const { ctx, asked } = harness();
  const g = await projectGraph([A], ctx);
  assert.deepEqual(g.nodes.map(fmt), ['0 - a', '1 0 b', '1 0 c', '2 1 d', '2 2 d', '3 3 a cycle', '3 3 e@dep@1.0.0', '3 4 a cycle', '3 4 e@dep@1.0.0']);
  // d is expanded twice in the tree but asked about once; nothing at depth 3 is asked about.
  assert.deepEqual(asked, ['a', 'b', 'c', 'd']);
  // Per expansion of d: the toolchain file and the malformed entry.
  assert.equal(g.other, 4);
  assert.equal(g.total, 9);
  assert.equal(g.truncated, false);
  // Call sites are in the caller (the parent), merged and sorted; previews from the tree.
  const dUnderC = g.nodes[4]!;
  assert.deepEqual(
    dUnderC.call_sites!.map((s) => [s.path, s.range.start.character, s.preview]),
    [
      ['a.ts', 2, '  d(); d();'],
      ['a.ts', 7, '  d(); d();'],
    ],
  );
  assert.equal(g.nodes[0]!.call_sites, undefined);
  assert.equal(g.nodes[0]!.preview, 'function a() {');
  assert.equal(g.nodes[0]!.kind, 'function');
  assert.deepEqual(
    g.nodes[6]!.call_sites!.map((s) => s.path),
    ['a.ts'],
  );
  assert.equal(g.nodes[6]!.path, 'index.d.ts');
});

test('the budget stops the walk: nothing past it is rendered or asked about', async () => {
  const { ctx, asked } = harness({ maxNodes: 3 });
  const g = await projectGraph([A], ctx);
  assert.deepEqual(g.nodes.map(fmt), ['0 - a', '1 0 b', '1 0 c']);
  assert.deepEqual(asked, ['a']);
  assert.equal(g.truncated, true);
  assert.equal(g.total, 3);
  const { ctx: small } = harness({ maxNodes: 2, depth: 1 });
  const h = await projectGraph([A], small);
  assert.deepEqual([h.nodes.length, h.total, h.truncated], [2, 3, true]);
});

test('depth 1 asks once; a position with nothing callable is no nodes; prepare garbage is counted', async () => {
  const { ctx, asked } = harness({ depth: 1 });
  assert.deepEqual((await projectGraph([A], ctx)).nodes.map(fmt), ['0 - a', '1 0 b', '1 0 c']);
  assert.deepEqual(asked, ['a']);
  for (const raw of [null, [], {}]) assert.deepEqual(await projectGraph(raw, ctx), { nodes: [], total: 0, other: 0, truncated: false });
  const g = await projectGraph([42, { name: 'x' }, item('y', 0, 'file:///etc/passwd')], ctx);
  assert.deepEqual([g.nodes.length, g.other], [0, 3]);
});

test('incoming calls: call sites are in the caller; type hierarchies have none', async () => {
  const incoming = harness({ shape: 'incoming', depth: 1, expand: async () => [{ from: D, fromRanges: [r(10, 2)] }] });
  const g = await projectGraph([A], incoming.ctx);
  assert.deepEqual(g.nodes.map(fmt), ['0 - a', '1 0 d']);
  assert.deepEqual(
    g.nodes[1]!.call_sites!.map((s) => [s.path, s.range.start.line, s.preview]),
    [['a.ts', 10, '  a();']],
  );
  const types = harness({ shape: 'types', depth: 1, expand: async () => [B] });
  const t = await projectGraph([A], types.ctx);
  assert.deepEqual(t.nodes.map(fmt), ['0 - a', '1 0 b']);
  assert.equal(t.nodes[1]!.call_sites, undefined);
});

test('server text is scrubbed and bounded; ranges in the caller encoding', async () => {
  const named = { ...A, name: 'a /home/secret/x.ts', detail: 'from /home/secret/y ' + 'z'.repeat(1000) };
  const { ctx } = harness({ depth: 1, expand: async () => [] });
  const g = await projectGraph([named], ctx);
  assert.doesNotMatch(g.nodes[0]!.name, /secret/);
  assert.doesNotMatch(g.nodes[0]!.detail!, /secret/);
  assert.ok(Buffer.byteLength(g.nodes[0]!.detail!) <= 256);
});

test('the answer-size cap drops the deepest nodes first', async () => {
  const { ctx } = harness();
  const g = await projectGraph([A], ctx);
  const full = JSON.stringify({ op: 'outgoingCalls', ...g }).length;
  const capped = capAnswer({ op: 'outgoingCalls', ...g }, full - 10);
  assert.equal(capped.truncated, true);
  assert.deepEqual(capped.nodes.map(fmt), g.nodes.slice(0, capped.nodes.length).map(fmt));
  assert.ok(capped.nodes.length < g.nodes.length);
  // every kept node's parent is kept
  for (const n of capped.nodes) if (n.parent !== undefined) assert.ok(n.parent < capped.nodes.length);
});
