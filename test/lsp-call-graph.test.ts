// Call and type hierarchies (issue 14 part 1) answered by real servers in the real
// SERVE jail: incoming and outgoing calls at depth 1 and 2 on TypeScript (TS 7),
// Python (pyright), Go (gopls) and C++ (clangd), checked by name, file and line
// (nodes, parents, call sites); supertypes and subtypes on clangd; 422 no_server
// where a server has no hierarchy (TS 7's types, bash-language-server's calls,
// clangd 16's outgoing calls), never an empty list; the node budget; a recursive
// function's cycle cut and marked; /ask callers and callees by name; /readyz and
// /v1/tools saying what is answered. Positions are found by text.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { lspAnswer } from '../src/api/responses.js';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gitRepo, runCli } from './helpers/ops.js';
import {
  cannotJail,
  fixturesDir,
  getJson,
  lineOf,
  lspQuery,
  position,
  postJson,
  shaOf,
  startLspd,
  uploadDir,
  uploadFixture,
  type Lspd,
} from './helpers/lsp-harness.js';

const skip = cannotJail();
const rootOf = (fx: string) => ({ org: 'acme', repo: fx, sha: shaOf(`call-graph-${fx}`) });
const TS = 'callgraph-ts';
const PY = 'callgraph-py';
const GO = 'callgraph-go';
const CPP = 'callgraph-cpp';
const SH = 'sh-basic';
/** Small, so that fan.ts's twelve callers overflow it; every other graph here fits. */
const MAX_NODES = 8;

type Loc = { path: string; range: { start: { line: number; character: number } }; preview?: string };
type Node = {
  id: number;
  parent?: number;
  depth: number;
  name: string;
  kind: string;
  path: string;
  selectionRange: { start: { line: number } };
  preview?: string;
  call_sites?: Loc[];
  cycle?: true;
};

/** A node as `depth parent name path:line`, parent `-` for a root. */
const fmt = (n: Node) => `${n.depth} ${n.parent ?? '-'} ${n.name} ${n.path}:${n.selectionRange.start.line}`;
/** Its call sites as `path:line`. */
const sites = (n: Node) => (n.call_sites ?? []).map((s) => `${s.path}:${s.range.start.line}`);

describe('call graphs in the SERVE jail', { skip }, () => {
  let d: Lspd;
  before(async () => {
    d = await startLspd({ env: { LSPD_MAX_CALL_NODES: String(MAX_NODES) } });
    for (const fx of [TS, PY, GO, CPP, SH]) await uploadFixture(d.url, rootOf(fx), fx);
  });
  after(() => d?.close());

  /** A 200 graph answer from `server`, valid by the published response schema; its nodes. */
  const graph = async (fx: string, server: string, body: Record<string, unknown>) => {
    const r = await lspQuery(d.url, { ...rootOf(fx), ...body });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    const a = lspAnswer.parse(r.body);
    assert.equal(a.server, server);
    assert.equal(a.op, body.op);
    assert.equal(a.untrusted, true);
    assert.equal(a.incomplete, false);
    const nodes = a.nodes as Node[];
    nodes.forEach((n, i) => assert.equal(n.id, i));
    return { a, nodes };
  };
  const at = (fx: string, path: string, needle: string, offset: number) => ({ path, ...position(fx, path, needle, offset) });
  const refused = async (fx: string, body: Record<string, unknown>, message: RegExp) => {
    const r = await lspQuery(d.url, { ...rootOf(fx), ...body });
    assert.equal(r.status, 422, JSON.stringify(r.body));
    assert.equal(r.body.error, 'no_server');
    assert.match(String(r.body.message), message);
  };

  describe('TypeScript (TS 7)', () => {
    const L = (path: string, needle: string) => `${path}:${lineOf(TS, path, needle)}`;
    const leafAt = at(TS, 'src/util.ts', 'function leaf', 'function '.length);

    test('incomingCalls, depth 1: the function, then its callers with their call sites', async () => {
      const { a, nodes } = await graph(TS, 'typescript', { op: 'incomingCalls', ...leafAt });
      assert.deepEqual(nodes.map(fmt), [
        `0 - leaf ${L('src/util.ts', 'function leaf')}`,
        `1 0 top ${L('src/main.ts', 'function top')}`,
        `1 0 mid ${L('src/util.ts', 'function mid')}`,
      ]);
      assert.equal(nodes[0]!.kind, 'function');
      assert.match(nodes[0]!.preview!, /export function leaf\(x: number\): number/);
      assert.deepEqual(sites(nodes[1]!), [L('src/main.ts', 'mid(1) + leaf(2)')]);
      assert.deepEqual(sites(nodes[2]!), [L('src/util.ts', 'leaf(x) * 2')]);
      assert.match(nodes[2]!.call_sites![0]!.preview!, /return leaf\(x\) \* 2;/);
      assert.equal(a.total, 3);
      assert.equal(a.truncated, false);
    });

    test('incomingCalls at an import specifier answers as at the declaration it imports', async () => {
      const atDecl = await graph(TS, 'typescript', { op: 'incomingCalls', ...leafAt });
      const atImport = await graph(TS, 'typescript', { op: 'incomingCalls', ...at(TS, 'src/main.ts', 'leaf, mid }', 0) });
      assert.deepEqual(atImport.nodes.map(fmt), atDecl.nodes.map(fmt));
      assert.equal(atImport.nodes.length, 3, 'leaf and its two callers');
    });

    test('incomingCalls, depth 2: callers of callers, under their parent', async () => {
      const { a, nodes } = await graph(TS, 'typescript', { op: 'incomingCalls', ...leafAt, depth: 2 });
      assert.deepEqual(nodes.map(fmt), [
        `0 - leaf ${L('src/util.ts', 'function leaf')}`,
        `1 0 top ${L('src/main.ts', 'function top')}`,
        `1 0 mid ${L('src/util.ts', 'function mid')}`,
        `2 2 top ${L('src/main.ts', 'function top')}`,
        `2 2 other ${L('src/main.ts', 'function other')}`,
      ]);
      assert.deepEqual(sites(nodes[3]!), [L('src/main.ts', 'mid(1) + leaf(2)')]);
      assert.deepEqual(sites(nodes[4]!), [L('src/main.ts', 'mid(3)')]);
      assert.equal(a.total, 5);
    });

    test('outgoingCalls, depth 1 and 2: call sites are in the caller', async () => {
      const topAt = at(TS, 'src/main.ts', 'function top', 'function '.length);
      const one = await graph(TS, 'typescript', { op: 'outgoingCalls', ...topAt });
      assert.deepEqual(one.nodes.map(fmt), [
        `0 - top ${L('src/main.ts', 'function top')}`,
        `1 0 leaf ${L('src/util.ts', 'function leaf')}`,
        `1 0 mid ${L('src/util.ts', 'function mid')}`,
      ]);
      assert.deepEqual(sites(one.nodes[1]!), [L('src/main.ts', 'mid(1) + leaf(2)')]);
      const two = await graph(TS, 'typescript', { op: 'outgoingCalls', ...topAt, depth: 2 });
      assert.deepEqual(two.nodes.map(fmt).slice(3), [`2 2 leaf ${L('src/util.ts', 'function leaf')}`]);
      assert.deepEqual(sites(two.nodes[3]!), [L('src/util.ts', 'leaf(x) * 2')]);
    });

    test('a recursive function: the cycle is cut and marked, even at depth 3', async () => {
      const { a, nodes } = await graph(TS, 'typescript', { op: 'incomingCalls', ...at(TS, 'src/util.ts', 'function countdown', 'function '.length), depth: 3 });
      const def = L('src/util.ts', 'function countdown');
      assert.deepEqual(nodes.map(fmt), [`0 - countdown ${def}`, `1 0 countdown ${def}`]);
      assert.equal(nodes[0]!.cycle, undefined);
      assert.equal(nodes[1]!.cycle, true);
      assert.deepEqual(sites(nodes[1]!), [L('src/util.ts', 'countdown(n - 1)')]);
      assert.equal(a.total, 2);
    });

    test('the node budget: twelve callers past a budget of eight say truncated and total', async () => {
      const { a, nodes } = await graph(TS, 'typescript', { op: 'incomingCalls', ...at(TS, 'src/fan.ts', 'function target', 'function '.length) });
      assert.equal(nodes.length, MAX_NODES);
      assert.equal(a.truncated, true);
      assert.equal(a.total, 13);
      // Sorted by file and line: the first seven callers, each under the root.
      assert.deepEqual(
        nodes.slice(1).map((n) => `${n.parent} ${n.name}`),
        ['00', '01', '02', '03', '04', '05', '06'].map((i) => `0 caller${i}`),
      );
    });

    test('TS 7 has no type hierarchy: supertypes and subtypes are 422 no_server naming it', async () => {
      const squareAt = at(TS, 'src/util.ts', 'class Square', 'class '.length);
      await refused(TS, { op: 'supertypes', ...squareAt }, /^typescript does not answer supertypes\.$/);
      await refused(TS, { op: 'subtypes', ...squareAt, depth: 2 }, /^typescript does not answer subtypes\.$/);
    });

    test('depth is checked: 1-3, and only on hierarchy ops', async () => {
      for (const body of [
        { op: 'incomingCalls', ...leafAt, depth: 4 },
        { op: 'incomingCalls', ...leafAt, depth: 0 },
        { op: 'references', ...leafAt, depth: 2 },
        { op: 'outgoingCalls', path: 'src/main.ts' },
      ]) {
        const r = await lspQuery(d.url, { ...rootOf(TS), ...body });
        assert.equal(r.status, 400, JSON.stringify(body));
      }
    });
  });

  describe('Python (pyright)', () => {
    const L = (path: string, needle: string) => `${path}:${lineOf(PY, path, needle)}`;

    test('incomingCalls at depth 1 and 2', async () => {
      const leafAt = at(PY, 'pkg/util.py', 'def leaf', 'def '.length);
      const one = await graph(PY, 'pyright', { op: 'incomingCalls', ...leafAt });
      assert.deepEqual(one.nodes.map(fmt), [
        `0 - leaf ${L('pkg/util.py', 'def leaf')}`,
        `1 0 top ${L('pkg/main.py', 'def top')}`,
        `1 0 mid ${L('pkg/util.py', 'def mid')}`,
      ]);
      assert.deepEqual(sites(one.nodes[1]!), [L('pkg/main.py', 'mid(1) + leaf(2)')]);
      assert.deepEqual(sites(one.nodes[2]!), [L('pkg/util.py', 'leaf(x) * 2')]);
      const two = await graph(PY, 'pyright', { op: 'incomingCalls', ...leafAt, depth: 2 });
      assert.deepEqual(two.nodes.map(fmt).slice(3), [`2 2 top ${L('pkg/main.py', 'def top')}`, `2 2 other ${L('pkg/main.py', 'def other')}`]);
      assert.deepEqual(sites(two.nodes[4]!), [L('pkg/main.py', 'mid(3)')]);
    });

    test('incomingCalls at an import answers as at the declaration it imports', async () => {
      const atDecl = await graph(PY, 'pyright', { op: 'incomingCalls', ...at(PY, 'pkg/util.py', 'def leaf', 'def '.length) });
      const atImport = await graph(PY, 'pyright', { op: 'incomingCalls', ...at(PY, 'pkg/main.py', 'leaf, mid', 0) });
      assert.deepEqual(atImport.nodes.map(fmt), atDecl.nodes.map(fmt));
      assert.equal(atImport.nodes.length, 3, 'leaf and its two callers');
    });

    test('outgoingCalls at depth 1 and 2', async () => {
      const topAt = at(PY, 'pkg/main.py', 'def top', 'def '.length);
      const one = await graph(PY, 'pyright', { op: 'outgoingCalls', ...topAt });
      assert.deepEqual(one.nodes.map(fmt), [
        `0 - top ${L('pkg/main.py', 'def top')}`,
        `1 0 leaf ${L('pkg/util.py', 'def leaf')}`,
        `1 0 mid ${L('pkg/util.py', 'def mid')}`,
      ]);
      assert.deepEqual(sites(one.nodes[2]!), [L('pkg/main.py', 'mid(1) + leaf(2)')]);
      const two = await graph(PY, 'pyright', { op: 'outgoingCalls', ...topAt, depth: 2 });
      assert.deepEqual(two.nodes.map(fmt).slice(3), [`2 2 leaf ${L('pkg/util.py', 'def leaf')}`]);
      assert.deepEqual(sites(two.nodes[3]!), [L('pkg/util.py', 'leaf(x) * 2')]);
    });

    test('a recursive function: cycle marked', async () => {
      const { nodes } = await graph(PY, 'pyright', { op: 'incomingCalls', ...at(PY, 'pkg/util.py', 'def countdown', 'def '.length), depth: 2 });
      assert.deepEqual(
        nodes.map((n) => `${fmt(n)}${n.cycle ? ' cycle' : ''}`),
        [`0 - countdown ${L('pkg/util.py', 'def countdown')}`, `1 0 countdown ${L('pkg/util.py', 'def countdown')} cycle`],
      );
    });
  });

  describe('Go (gopls)', () => {
    const L = (path: string, needle: string) => `${path}:${lineOf(GO, path, needle)}`;

    test('incomingCalls at depth 2 across packages', async () => {
      const { nodes } = await graph(GO, 'gopls', { op: 'incomingCalls', ...at(GO, 'calc/calc.go', 'func Leaf', 'func '.length), depth: 2 });
      assert.deepEqual(nodes.map(fmt), [
        `0 - Leaf ${L('calc/calc.go', 'func Leaf')}`,
        `1 0 Mid ${L('calc/calc.go', 'func Mid')}`,
        `1 0 Top ${L('main.go', 'func Top')}`,
        `2 1 Top ${L('main.go', 'func Top')}`,
        `2 1 Other ${L('main.go', 'func Other')}`,
        `2 2 main ${L('main.go', 'func main')}`,
      ]);
      assert.deepEqual(sites(nodes[2]!), [L('main.go', 'calc.Mid(1) + calc.Leaf(2)')]);
    });

    test('outgoingCalls at depth 1', async () => {
      const { nodes } = await graph(GO, 'gopls', { op: 'outgoingCalls', ...at(GO, 'main.go', 'func Top', 'func '.length) });
      assert.deepEqual(nodes.map(fmt), [
        `0 - Top ${L('main.go', 'func Top')}`,
        `1 0 Leaf ${L('calc/calc.go', 'func Leaf')}`,
        `1 0 Mid ${L('calc/calc.go', 'func Mid')}`,
      ]);
      assert.deepEqual(sites(nodes[1]!), [L('main.go', 'calc.Mid(1) + calc.Leaf(2)')]);
    });
  });

  describe('C++ (clangd)', () => {
    const F = 'src/shapes.cpp';
    const L = (needle: string) => `${F}:${lineOf(CPP, F, needle)}`;

    test('incomingCalls at depth 2', async () => {
      const { nodes } = await graph(CPP, 'clangd', { op: 'incomingCalls', ...at(CPP, F, 'int leaf', 'int '.length), depth: 2 });
      assert.deepEqual(nodes.map(fmt), [`0 - leaf ${L('int leaf')}`, `1 0 mid ${L('int mid')}`, `1 0 top ${L('int top')}`, `2 1 top ${L('int top')}`]);
      assert.deepEqual(sites(nodes[1]!), [L('int mid')]);
    });

    test('clangd 16 refuses outgoingCalls (MethodNotFound): 422 no_server, not a failure', async () => {
      await refused(CPP, { op: 'outgoingCalls', ...at(CPP, F, 'int top', 'int '.length) }, /^clangd does not answer outgoingCalls\.$/);
    });

    test('supertypes and subtypes at depth 2', async () => {
      const up = await graph(CPP, 'clangd', { op: 'supertypes', ...at(CPP, F, 'struct Square', 'struct '.length), depth: 2 });
      assert.deepEqual(up.nodes.map(fmt), [`0 - Square ${L('struct Square')}`, `1 0 Polygon ${L('struct Polygon')}`, `2 1 Shape ${L('struct Shape')}`]);
      assert.equal(up.nodes[0]!.kind, 'struct');
      assert.equal(up.nodes[1]!.call_sites, undefined);
      const down = await graph(CPP, 'clangd', { op: 'subtypes', ...at(CPP, F, 'struct Shape', 'struct '.length), depth: 2 });
      assert.deepEqual(down.nodes.map(fmt), [`0 - Shape ${L('struct Shape')}`, `1 0 Polygon ${L('struct Polygon')}`, `2 1 Square ${L('struct Square')}`]);
      const one = await graph(CPP, 'clangd', { op: 'subtypes', ...at(CPP, F, 'struct Shape', 'struct '.length) });
      assert.deepEqual(one.nodes.map(fmt), down.nodes.map(fmt).slice(0, 2));
    });
  });

  test('a server without call hierarchy (bash-language-server) is 422 no_server naming it and the op', async () => {
    await refused(SH, { op: 'incomingCalls', ...at(SH, 'main.sh', 'greet world', 0) }, /^bash-language-server does not answer incomingCalls\.$/);
  });

  test('/ask callers and callees by name walk from the definition', async () => {
    const L = (path: string, needle: string) => `${path}:${lineOf(TS, path, needle)}`;
    const r = await postJson(d.url, '/ask', { ...rootOf(TS), symbol: 'mid', op: 'callers' });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.op, 'callers');
    assert.equal(r.body.matches, 1);
    assert.equal(r.body.untrusted, true);
    assert.deepEqual((r.body.nodes as Node[]).map(fmt), [
      `0 - mid ${L('src/util.ts', 'function mid')}`,
      `1 0 top ${L('src/main.ts', 'function top')}`,
      `1 0 other ${L('src/main.ts', 'function other')}`,
    ]);
    assert.equal((r.body.resolved as { path: string }).path, 'src/util.ts');
    const c = await postJson(d.url, '/ask', { ...rootOf(TS), symbol: 'top', op: 'callees', depth: 2 });
    assert.equal(c.status, 200, JSON.stringify(c.body));
    assert.deepEqual(
      (c.body.nodes as Node[]).map((n) => `${n.depth} ${n.name}`),
      ['0 top', '1 leaf', '1 mid', '2 leaf'],
    );
  });

  test('lspd lsp incomingCalls --depth 2 prints the tree, 1-based, indented by depth', async () => {
    let out = '';
    // The CLI names roots by a checkout's commit: the fixture as one.
    const dir = mkdtempSync(join(tmpdir(), 'lspd-cg-cli-'));
    try {
      const files = ['package.json', 'tsconfig.json', 'src/util.ts', 'src/main.ts'];
      const sha = gitRepo(dir, Object.fromEntries(files.map((f) => [f, readFileSync(join(fixturesDir, TS, f), 'utf8')])));
      await uploadDir(d.url, { org: 'acme', repo: 'cg-cli', sha }, dir);
      const p = position(TS, 'src/util.ts', 'function leaf', 'function '.length);
      const r = await runCli(
        ['lsp', 'incomingCalls', `src/util.ts:${p.line + 1}:${p.character + 1}`, '--depth', '2', '--org', 'acme', '--repo', 'cg-cli', '--url', d.url],
        { cwd: dir },
      );
      assert.equal(r.code, 0, r.stderr);
      out = r.stdout;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const L = (path: string, needle: string) => `${path}:${lineOf(TS, path, needle) + 1}`;
    assert.deepEqual(
      out
        .trimEnd()
        .split('\n')
        .map((l) => l.replace(/:\d+ {2}/, '  ')),
      [
        `${L('src/util.ts', 'function leaf')}  function leaf`,
        `  ${L('src/main.ts', 'function top')}  function top`,
        `  ${L('src/util.ts', 'function mid')}  function mid`,
        `    ${L('src/main.ts', 'function top')}  function top`,
        `    ${L('src/main.ts', 'function other')}  function other`,
      ],
    );
  });

  test('/readyz says which hierarchy ops each server answers; /v1/tools lists the tools', async () => {
    const servers = (await getJson(d.url, '/readyz')).body.servers as Record<string, { hierarchy_ops?: string[]; hierarchy_ops_from?: string }>;
    assert.deepEqual(servers.typescript?.hierarchy_ops, ['incomingCalls', 'outgoingCalls']);
    assert.deepEqual(servers.pyright?.hierarchy_ops, ['incomingCalls', 'outgoingCalls']);
    assert.deepEqual(servers.gopls?.hierarchy_ops, ['incomingCalls', 'outgoingCalls']);
    assert.deepEqual(servers.clangd?.hierarchy_ops, ['incomingCalls', 'supertypes', 'subtypes']);
    assert.deepEqual(servers['bash-language-server']?.hierarchy_ops, []);
    assert.deepEqual(servers.intelephense?.hierarchy_ops, []);
    // The declarations agree with what the sessions started above advertise (clangd's
    // capability overstates: it claims outgoing calls, which it refuses, tested above).
    const sessions = [...(d.lsp.pool as unknown as { sessions: Map<string, { row: { name: string }; supports(p: string): boolean }> }).sessions.values()];
    for (const s of sessions) {
      const declared = servers[s.row.name]!.hierarchy_ops!;
      assert.equal(declared.includes('incomingCalls'), s.supports('callHierarchyProvider'), s.row.name);
      assert.equal(declared.includes('supertypes'), s.supports('typeHierarchyProvider'), s.row.name);
    }
    assert.ok(sessions.length >= 5, `sessions of every row asked: ${sessions.map((s) => s.row.name).join(', ')}`);
    const tools = ((await getJson(d.url, '/v1/tools')).body.tools as { name: string; description: string }[]).map((t) => t.name);
    for (const n of ['lsp_incoming_calls', 'lsp_outgoing_calls', 'lsp_supertypes', 'lsp_subtypes']) assert.ok(tools.includes(n), n);
  });
});
