// /mcp through a real MCP client (the SDK's Client + StreamableHTTPClientTransport
// over HTTP) against a real lspd: it lists exactly the tools /v1/tools lists, and
// every tool answers what the HTTP route it mirrors answers, errors included.
// A daemon whose jail is not proved lists no tool over MCP either.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { askSuite } from './helpers/ask-suite.js';
import { getJson, position, postJson, shaOf, stable } from './helpers/lsp-harness.js';
import { spawnServing } from './helpers/daemon.js';

const root = { org: 'acme', repo: 'mcp-tools', sha: shaOf('mcp-tools') };
// TS 7 has no type hierarchy (422 no_server): the type tools are called on clangd.
const cpp = { org: 'acme', repo: 'mcp-tools-cpp', sha: shaOf('mcp-tools-cpp') };
let client: Client | undefined;

async function connect(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const c = new Client({ name: 'lspd-test', version: '1' });
  await c.connect(new StreamableHTTPClientTransport(new URL(url + '/mcp'), { requestInit: { headers } }));
  return c;
}

const daemon = askSuite({
  uploads: [
    [root, 'ask-ts'],
    [cpp, 'callgraph-cpp'],
  ],
  ready: async (url) => {
    client = await connect(url);
  },
  stopping: async () => {
    await client?.close();
  },
});

/** Answers compared without what differs between two runs (timings), batch entries included. */
function comparable(a: Record<string, unknown>): Record<string, unknown> {
  const out = stable(a);
  if (Array.isArray(out.answers)) out.answers = (out.answers as Record<string, unknown>[]).map(stable);
  return out;
}

test('tools/list is /v1/tools', async (t) => {
  if (daemon.skipWhy()) return t.skip(daemon.skipWhy());
  const http = (await getJson(daemon.url(), '/v1/tools')).body.tools as { name: string; description: string; inputSchema: unknown }[];
  const mcp = (await client!.listTools()).tools;
  assert.deepEqual(
    mcp.map((x) => ({ name: x.name, description: x.description, inputSchema: x.inputSchema })),
    http.map((x) => ({ name: x.name, description: x.description, inputSchema: x.inputSchema })),
  );
  for (const x of mcp) assert.equal(x.annotations?.readOnlyHint, true);
});

test('each tool over MCP answers like its HTTP route', { timeout: 180_000 }, async (t) => {
  if (daemon.skipWhy()) return t.skip(daemon.skipWhy());
  const at = position('ask-ts', 'src/main.ts', 'server.close()', 'server.'.length);
  const pos = { path: 'src/main.ts', ...at };
  const typeAt = { path: 'src/shapes.cpp', ...position('callgraph-cpp', 'src/shapes.cpp', 'struct Polygon', 'struct '.length) };
  const cases: { tool: string; args: Record<string, unknown>; route: string; body: Record<string, unknown>; root?: typeof cpp }[] = [
    { tool: 'lsp_locate', args: { symbol: 'Server.close' }, route: '/ask', body: { symbol: 'Server.close' } },
    { tool: 'lsp_locate', args: { symbol: 'greet', op: 'hover' }, route: '/ask', body: { symbol: 'greet', op: 'hover' } },
    { tool: 'lsp_locate', args: { symbol: 'close', op: 'references' }, route: '/ask', body: { symbol: 'close', op: 'references' } },
    {
      tool: 'lsp_ask_batch',
      args: { queries: [{ symbol: 'greet' }, { symbol: 'nope_nothing' }, { symbol: 'Paths.join' }] },
      route: '/ask',
      body: { queries: [{ symbol: 'greet' }, { symbol: 'nope_nothing' }, { symbol: 'Paths.join' }] },
    },
    { tool: 'lsp_definition', args: pos, route: '/v1/code/lsp', body: { op: 'definition', ...pos } },
    { tool: 'lsp_type_definition', args: pos, route: '/v1/code/lsp', body: { op: 'typeDefinition', ...pos } },
    { tool: 'lsp_implementation', args: pos, route: '/v1/code/lsp', body: { op: 'implementation', ...pos } },
    { tool: 'lsp_references', args: { ...pos, context: 1 }, route: '/v1/code/lsp', body: { op: 'references', ...pos, context: 1 } },
    { tool: 'lsp_hover', args: pos, route: '/v1/code/lsp', body: { op: 'hover', ...pos } },
    { tool: 'lsp_rename', args: { ...pos, newName: 'shutdown' }, route: '/v1/code/lsp', body: { op: 'rename', ...pos, newName: 'shutdown' } },
    { tool: 'lsp_code_actions', args: pos, route: '/v1/code/lsp', body: { op: 'codeActions', ...pos } },
    { tool: 'lsp_symbols', args: { path: 'src/server.ts' }, route: '/v1/code/lsp', body: { op: 'documentSymbols', path: 'src/server.ts' } },
    { tool: 'lsp_symbols', args: { query: 'close' }, route: '/v1/code/lsp', body: { op: 'workspaceSymbols', query: 'close' } },
    { tool: 'lsp_diagnostics', args: { path: 'src/main.ts' }, route: '/v1/code/lsp', body: { op: 'diagnostics', path: 'src/main.ts' } },
    // A GET route: `body` is its query string.
    {
      tool: 'read_file',
      args: { path: 'src/main.ts', start: 1, end: 3 },
      route: `/v1/roots/${root.org}/${root.repo}/${root.sha}/files/src/main.ts`,
      body: { start: 1, end: 3 },
    },
    // A diff names its two roots itself (a root diffed with itself changes nothing).
    { tool: 'diff', args: { base: root.sha, head: root.sha }, route: '/v1/diff', body: { base: root.sha, head: root.sha } },
    // A check adds a file with one error, in memory only: asked three times, answered alike.
    {
      tool: 'check_patch',
      args: { patch: "--- /dev/null\n+++ b/src/extra.ts\n@@ -0,0 +1 @@\n+export const n: number = 'one';\n" },
      route: '/v1/check',
      body: { patch: "--- /dev/null\n+++ b/src/extra.ts\n@@ -0,0 +1 @@\n+export const n: number = 'one';\n" },
    },
    { tool: 'lsp_incoming_calls', args: { ...pos, depth: 2 }, route: '/v1/code/lsp', body: { op: 'incomingCalls', ...pos, depth: 2 } },
    { tool: 'lsp_outgoing_calls', args: pos, route: '/v1/code/lsp', body: { op: 'outgoingCalls', ...pos } },
    { tool: 'lsp_locate', args: { symbol: 'Server.close', op: 'callers', depth: 2 }, route: '/ask', body: { symbol: 'Server.close', op: 'callers', depth: 2 } },
    { tool: 'lsp_supertypes', root: cpp, args: typeAt, route: '/v1/code/lsp', body: { op: 'supertypes', ...typeAt } },
    { tool: 'lsp_subtypes', root: cpp, args: typeAt, route: '/v1/code/lsp', body: { op: 'subtypes', ...typeAt } },
  ];
  const http = (c: (typeof cases)[number], key: Record<string, string>) =>
    c.route.startsWith('/v1/roots/')
      ? getJson(daemon.url(), `${c.route}?${new URLSearchParams(Object.entries(c.body).map(([k, v]): [string, string] => [k, String(v)]))}`)
      : postJson(daemon.url(), c.route, { ...key, ...c.body });
  const seen = new Set<string>();
  for (const c of cases) {
    // The HTTP route first (it warms the session), then MCP, then HTTP again to compare with.
    const key = c.tool === 'diff' ? { org: root.org, repo: root.repo } : (c.root ?? root);
    await http(c, key);
    const res = await client!.callTool({ name: c.tool, arguments: { ...key, ...c.args } });
    const answer = await http(c, key);
    assert.equal(answer.status, 200, `${c.tool}: ${JSON.stringify(answer.body)}`);
    assert.equal(res.isError, undefined, `${c.tool}: ${JSON.stringify(res.content)}`);
    const structured = res.structuredContent as Record<string, unknown>;
    const text = (res.content as { type: string; text: string }[])[0]!;
    assert.equal(text.type, 'text');
    assert.deepEqual(JSON.parse(text.text), structured, `${c.tool}: text and structured content agree`);
    assert.deepEqual(comparable(structured), comparable(answer.body), `${c.tool} ${JSON.stringify(c.args)}`);
    seen.add(c.tool);
  }
  const listed = (await client!.listTools()).tools.map((x) => x.name);
  assert.deepEqual([...seen].sort(), [...listed].sort(), 'every listed tool was called');
});

test('tool errors are the route errors: not found, bad arguments, unknown root, unknown tool', async (t) => {
  if (daemon.skipWhy()) return t.skip(daemon.skipWhy());
  const errorOf = async (name: string, args: Record<string, unknown>) => {
    const res = await client!.callTool({ name, arguments: args });
    assert.equal(res.isError, true, JSON.stringify(res));
    return res.structuredContent as Record<string, unknown>;
  };
  const nf = await errorOf('lsp_locate', { ...root, symbol: 'noSuchThingAnywhere' });
  const httpNf = await postJson(daemon.url(), '/ask', { ...root, symbol: 'noSuchThingAnywhere' });
  assert.equal(httpNf.status, 404);
  assert.deepEqual(nf, { ...httpNf.body, status: 404 });

  const tree = await errorOf('lsp_hover', { ...root, sha: shaOf('not-uploaded'), path: 'a.ts', line: 0, character: 0 });
  assert.equal(tree.error, 'need_tree');
  assert.equal(tree.status, 409);

  const bad = await errorOf('lsp_definition', { ...root, path: '../etc/passwd', line: 0, character: 0 });
  assert.equal(bad.error, 'bad_request');

  const unknown = await errorOf('lsp_nothing', root);
  assert.equal(unknown.error, 'bad_request');
});

test('a tools/call whose params are not a tool call is JSON-RPC -32602 Invalid params, naming the field', async () => {
  for (const [params, field] of [
    [{ name: 5 }, 'name'],
    [{ name: 'lsp_locate', arguments: 'x' }, 'arguments'],
    [{}, 'name'],
  ] as const) {
    const r = await fetch(`${daemon.url()}/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params }),
    });
    const body = (await r.json()) as { id: number; error: { code: number; message: string } };
    assert.equal(body.id, 7);
    assert.equal(body.error.code, -32602, body.error.message);
    assert.match(body.error.message, new RegExp(`"${field}"`));
  }
});

test('an unproved jail: MCP lists no tools and refuses calls with not_ready', { timeout: 60_000 }, async () => {
  const broken = await spawnServing({ env: { LSPD_BWRAP_PATH: '/nonexistent/bwrap' }, expectReady: false });
  const c = await connect(broken.url);
  try {
    assert.ok(broken.notReady);
    assert.deepEqual((await c.listTools()).tools, []);
    const res = await c.callTool({ name: 'lsp_locate', arguments: { ...root, symbol: 'x' } });
    assert.equal(res.isError, true);
    assert.equal((res.structuredContent as { error: string }).error, 'not_ready');
  } finally {
    await c.close();
    await broken?.close();
  }
});
