// GET /v1/tools from a real lspd: every input schema is valid JSON Schema (ajv,
// strict) that accepts what the HTTP route accepts and refuses what it refuses;
// and a daemon whose jail could not be proved lists no tool at all (they would
// all be refused).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv } from 'ajv';
import { askSuite } from './helpers/ask-suite.js';
import { getJson, position, postJson, shaOf } from './helpers/lsp-harness.js';
import { spawnServing } from './helpers/daemon.js';

const root = { org: 'acme', repo: 'tools-http', sha: shaOf('tools-http') };
const pair = { org: root.org, repo: root.repo, base: root.sha, head: root.sha };
// TS 7 has no type hierarchy (422 no_server): the type tools are sampled on clangd.
const cpp = { org: 'acme', repo: 'tools-http-cpp', sha: shaOf('tools-http-cpp') };
const daemon = askSuite({
  uploads: [
    [root, 'ask-ts'],
    [cpp, 'callgraph-cpp'],
  ],
});

type Tool = { name: string; description: string; inputSchema: Record<string, unknown> };

test('/v1/tools: schemas compile and agree with the routes on real arguments', { timeout: 120_000 }, async (t) => {
  if (daemon.skipWhy()) return t.skip(daemon.skipWhy());
  const r = await getJson(daemon.url(), '/v1/tools');
  assert.equal(r.status, 200);
  const tools = r.body.tools as Tool[];
  const names = tools.map((x) => x.name);
  for (const n of [
    'lsp_definition',
    'lsp_references',
    'lsp_hover',
    'lsp_symbols',
    'lsp_diagnostics',
    'lsp_locate',
    'lsp_incoming_calls',
    'lsp_outgoing_calls',
    'lsp_supertypes',
    'lsp_subtypes',
  ])
    assert.ok(names.includes(n), n);

  const ajv = new Ajv({ strict: true, allErrors: true });
  const closeAt = position('ask-ts', 'src/main.ts', 'server.close()', 'server.'.length);
  // One real call per tool: the arguments validate against the published schema and the route answers them.
  const squareAt = position('callgraph-cpp', 'src/shapes.cpp', 'struct Polygon', 'struct '.length);
  const samples: Record<string, { args: Record<string, unknown>; route: string; body: Record<string, unknown>; root?: typeof cpp }> = {
    lsp_locate: { args: { ...root, symbol: 'Server.close' }, route: '/ask', body: { symbol: 'Server.close' } },
    lsp_ask_batch: { args: { ...root, queries: [{ symbol: 'greet' }] }, route: '/ask', body: { queries: [{ symbol: 'greet' }] } },
    lsp_definition: { args: { ...root, path: 'src/main.ts', ...closeAt }, route: '/v1/code/lsp', body: { op: 'definition', path: 'src/main.ts', ...closeAt } },
    lsp_type_definition: {
      args: { ...root, path: 'src/main.ts', ...closeAt },
      route: '/v1/code/lsp',
      body: { op: 'typeDefinition', path: 'src/main.ts', ...closeAt },
    },
    lsp_implementation: {
      args: { ...root, path: 'src/main.ts', ...closeAt },
      route: '/v1/code/lsp',
      body: { op: 'implementation', path: 'src/main.ts', ...closeAt },
    },
    lsp_references: {
      args: { ...root, path: 'src/main.ts', ...closeAt, limit: 5 },
      route: '/v1/code/lsp',
      body: { op: 'references', path: 'src/main.ts', ...closeAt, limit: 5 },
    },
    lsp_hover: { args: { ...root, path: 'src/main.ts', ...closeAt }, route: '/v1/code/lsp', body: { op: 'hover', path: 'src/main.ts', ...closeAt } },
    lsp_rename: {
      args: { ...root, path: 'src/main.ts', ...closeAt, newName: 'shutdown' },
      route: '/v1/code/lsp',
      body: { op: 'rename', path: 'src/main.ts', ...closeAt, newName: 'shutdown' },
    },
    lsp_code_actions: {
      args: { ...root, path: 'src/main.ts', ...closeAt, only: ['quickfix'] },
      route: '/v1/code/lsp',
      body: { op: 'codeActions', path: 'src/main.ts', ...closeAt, only: ['quickfix'] },
    },
    lsp_symbols: { args: { ...root, path: 'src/server.ts' }, route: '/v1/code/lsp', body: { op: 'documentSymbols', path: 'src/server.ts' } },
    lsp_diagnostics: { args: { ...root, path: 'src/main.ts' }, route: '/v1/code/lsp', body: { op: 'diagnostics', path: 'src/main.ts' } },
    check_patch: {
      args: { ...root, patch: "--- /dev/null\n+++ b/src/extra.ts\n@@ -0,0 +1 @@\n+export const n: number = 'one';\n" },
      route: '/v1/check',
      body: { patch: "--- /dev/null\n+++ b/src/extra.ts\n@@ -0,0 +1 @@\n+export const n: number = 'one';\n" },
    },
    // A GET route: the root key is in its path, `body` is its query.
    read_file: { args: { ...root, path: 'src/main.ts', start: 0, end: 2 }, route: 'GET /files/src/main.ts', body: { start: 0, end: 2 } },
    // Two roots, not one: the body names them itself (a root diffed with itself changes nothing).
    diff: { args: pair, route: '/v1/diff', body: pair },
    lsp_incoming_calls: {
      args: { ...root, path: 'src/main.ts', ...closeAt, depth: 2 },
      route: '/v1/code/lsp',
      body: { op: 'incomingCalls', path: 'src/main.ts', ...closeAt, depth: 2 },
    },
    lsp_outgoing_calls: {
      args: { ...root, path: 'src/main.ts', ...closeAt },
      route: '/v1/code/lsp',
      body: { op: 'outgoingCalls', path: 'src/main.ts', ...closeAt },
    },
    lsp_supertypes: {
      root: cpp,
      args: { ...cpp, path: 'src/shapes.cpp', ...squareAt },
      route: '/v1/code/lsp',
      body: { op: 'supertypes', path: 'src/shapes.cpp', ...squareAt },
    },
    lsp_subtypes: {
      root: cpp,
      args: { ...cpp, path: 'src/shapes.cpp', ...squareAt, depth: 3 },
      route: '/v1/code/lsp',
      body: { op: 'subtypes', path: 'src/shapes.cpp', ...squareAt, depth: 3 },
    },
  };
  /** Call a sample's route with this root key. */
  const call = (route: string, body: Record<string, unknown>, key: typeof root) =>
    route.startsWith('GET ')
      ? getJson(
          daemon.url(),
          `/v1/roots/${key.org}/${key.repo}/${key.sha}${route.slice(4)}?${new URLSearchParams(Object.entries(body).map(([k, v]): [string, string] => [k, String(v)]))}`,
        )
      : postJson(daemon.url(), route, 'base' in body ? body : { ...body, ...key });
  // The languages served here are not called unavailable; any that are not served are named with why.
  // TS 7 and pyright ship in package.json, so both are always served here.
  const ready = (await getJson(daemon.url(), '/readyz')).body.servers as Record<string, { available: boolean }>;
  assert.equal(ready.typescript?.available, true, 'TS 7 is served');
  assert.equal(ready.pyright?.available, true, 'pyright is served');
  for (const tool of tools) {
    const note = /Not served by this daemon: ([^;]*);/.exec(tool.description)?.[1] ?? '';
    assert.doesNotMatch(note, /typescript/, tool.name);
    assert.doesNotMatch(note, /python/, tool.name);
    for (const item of note ? note.split(', ') : []) assert.match(item, /^[a-z]+ \((no language server|[\w-]+ unavailable)\)$/, item);
  }
  for (const tool of tools) {
    assert.equal(tool.inputSchema.type, 'object', tool.name);
    assert.ok(tool.description.length > 80, `${tool.name} has a real description`);
    const validate = ajv.compile(tool.inputSchema);
    const sample = samples[tool.name];
    assert.ok(sample, `a sample call for ${tool.name}`);
    assert.ok(validate(sample.args), `${tool.name}: ${JSON.stringify(validate.errors)}`);
    const answer = await call(sample.route, sample.body, sample.root ?? root);
    assert.equal(answer.status, 200, `${tool.name} → ${sample.route}: ${JSON.stringify(answer.body)}`);
    // What the schema refuses, the route refuses too.
    const shaField = 'base' in sample.body ? 'base' : 'sha';
    const bad = { ...sample.args, [shaField]: 'main' };
    assert.equal(validate(bad), false, tool.name);
    const refused =
      shaField === 'base' ? await call(sample.route, { ...sample.body, base: 'main' }, root) : await call(sample.route, sample.body, { ...root, sha: 'main' });
    assert.equal(refused.status, 400, tool.name);
    assert.equal(refused.body.error, 'bad_sha', tool.name);
  }
});

test('a daemon whose jail is not proved lists no tools', { timeout: 60_000 }, async () => {
  const broken = await spawnServing({ env: { LSPD_BWRAP_PATH: '/nonexistent/bwrap' }, expectReady: false });
  try {
    assert.ok(broken.notReady, 'the canary must fail without bubblewrap');
    const r = await getJson(broken.url, '/v1/tools');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.tools, []);
  } finally {
    await broken?.close();
  }
});
