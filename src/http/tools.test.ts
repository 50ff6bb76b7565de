// Unit tests of the tool table: what is listed for which health, and that every
// schema is the route's (an argument set the tool schema accepts, the route accepts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Ajv } from 'ajv';
import { Health } from '../health.js';
import { callTool, coverageOf, listTools, toolNames, type ToolRunner } from './tools.js';
import { AppError } from '../errors.js';

function health(ready: boolean, servers: Health['servers'] = {}): Health {
  const h = new Health();
  if (ready) h.jail = { serve: { ok: true }, fetch: { ok: true } };
  h.servers = servers;
  return h;
}

const root = { org: 'acme', repo: 'api', sha: 'a'.repeat(40) };
const calls: { kind: string; body: unknown }[] = [];
/** A service call recorded, answered `{ok: true}` (the answer's shape is the service's concern, not the table's). */
const record =
  (kind: string) =>
  async (body: unknown): Promise<never> =>
    (calls.push({ kind, body }), { ok: true }) as never;
const runner: ToolRunner = {
  query: { lsp: record('lsp') },
  ask: { answer: record('ask') },
  files: { read: record('readFile') },
  diff: { diff: record('diff') },
  checks: { check: record('check') },
  assertOrg: (org) => {
    if (org !== 'acme') throw new AppError('forbidden', 403, 'no');
  },
  assertPermission: () => {},
};

test('no query tool is listed while the jail is unproved; all are once it is', () => {
  assert.deepEqual(listTools(health(false)), []);
  const names = listTools(health(true)).map((t) => t.name);
  assert.deepEqual(names, [...toolNames]);
  for (const n of ['lsp_definition', 'lsp_references', 'lsp_hover', 'lsp_symbols', 'lsp_diagnostics', 'lsp_locate']) assert.ok(names.includes(n), n);
});

test('without the table: an unavailable server is named in every description; available ones are not', () => {
  const tools = listTools(health(true, { gopls: { available: false, reason: 'not installed' }, pyright: { available: true } }));
  for (const t of tools.filter((x) => x.name !== 'read_file')) {
    assert.match(t.description, /Unavailable on this daemon: gopls;/);
    assert.doesNotMatch(t.description, /not installed/, 'probe reasons are for operators');
    assert.doesNotMatch(t.description, /pyright/);
  }
  assert.doesNotMatch(
    listTools(health(true))
      .map((t) => t.description)
      .join(' '),
    /Unavailable/,
  );
  // read_file reads any file: a language not served is no reason not to read it.
  assert.doesNotMatch(tools.find((t) => t.name === 'read_file')!.description, /Unavailable/);
});

test('with the table: languages are named, by why they are not served', () => {
  const coverage = [{ language: 'typescript' as const, server: 'typescript' }, { language: 'python' as const, server: 'pyright' }, { language: 'go' as const }];
  const h = health(true, { typescript: { available: true }, pyright: { available: false, reason: 'not installed (/opt/x missing)' } });
  for (const t of listTools(h, coverage).filter((x) => x.name !== 'read_file')) {
    assert.match(t.description, /Not served by this daemon: python \(pyright unavailable\), go \(no language server\);/);
    assert.doesNotMatch(t.description, /typescript \(|\/opt\/x/, 'served languages and probe reasons stay out');
  }
  assert.deepEqual(
    coverageOf({ choose: (l) => (l === 'python' ? { name: 'pyright' } : undefined) }).find((c) => c.language === 'python'),
    { language: 'python', server: 'pyright' },
  );
});

test('every input schema compiles (ajv strict) and accepts/refuses what the route does', async () => {
  const ajv = new Ajv({ strict: true, allErrors: true });
  const tools = listTools(health(true));
  const good: Record<string, Record<string, unknown>> = {
    lsp_locate: { ...root, symbol: 'Server.close' },
    lsp_ask_batch: { ...root, queries: [{ symbol: 'a' }, { symbol: 'b', op: 'hover' }] },
    lsp_definition: { ...root, path: 'a.ts', line: 1, character: 2 },
    lsp_type_definition: { ...root, path: 'a.ts', line: 1, character: 2 },
    lsp_implementation: { ...root, path: 'a.ts', line: 1, character: 2 },
    lsp_references: { ...root, path: 'a.ts', line: 1, character: 2, includeDeclaration: false, limit: 10 },
    lsp_hover: { ...root, path: 'a.ts', line: 1, character: 2, encoding: 'utf-8' },
    lsp_rename: { ...root, path: 'a.ts', line: 1, character: 2, newName: 'close2' },
    lsp_code_actions: { ...root, path: 'a.ts', line: 1, character: 2, endLine: 3, endCharacter: 0, only: ['quickfix', 'refactor.extract'] },
    lsp_incoming_calls: { ...root, path: 'a.ts', line: 1, character: 2, depth: 3 },
    lsp_outgoing_calls: { ...root, path: 'a.ts', line: 1, character: 2 },
    lsp_supertypes: { ...root, path: 'a.ts', line: 1, character: 2, depth: 2 },
    lsp_subtypes: { ...root, path: 'a.ts', line: 1, character: 2 },
    lsp_symbols: { ...root, query: 'Server' },
    lsp_diagnostics: { ...root, path: 'a.ts' },
    read_file: { ...root, path: 'deps/npm/top/node_modules/zod/lib/types.d.ts', from: 'deps', start: 3, end: 40 },
    diff: { org: root.org, repo: root.repo, base: root.sha, head: 'b'.repeat(40) },
    check_patch: { ...root, patch: '--- a/a.ts\n+++ b/a.ts\n@@ -1 +1 @@\n-x\n+y\n' },
  };
  for (const t of tools) {
    const validate = ajv.compile(t.inputSchema);
    const args = good[t.name];
    assert.ok(args, `a sample for ${t.name}`);
    assert.ok(validate(args), `${t.name}: ${JSON.stringify(validate.errors)}`);
    await callTool(t.name, args, runner, AbortSignal.timeout(1000));
    // Refused by the schema and by the call alike: a bad sha, an unknown field, a missing root.
    const refusals: [Record<string, unknown>, string][] = [
      [{ ...args, ['sha' in args ? 'sha' : 'base']: 'main' }, 'bad_sha'],
      [{ ...args, nope: 1 }, 'bad_request'],
      [{ ...args, org: undefined }, 'bad_name'],
      ...('depth' in args ? [[{ ...args, depth: 4 }, 'bad_request'] as [Record<string, unknown>, string]] : []),
    ];
    for (const [bad, code] of refusals) {
      assert.equal(validate(JSON.parse(JSON.stringify(bad))), false, `${t.name} schema accepts ${JSON.stringify(bad)}`);
      await assert.rejects(callTool(t.name, bad, runner, AbortSignal.timeout(1000)), (e: unknown) => e instanceof AppError && e.code === code);
    }
  }
  // Position tools reach /v1/code/lsp's schema with their op; symbols picks its op by path.
  assert.deepEqual(
    calls.filter((c) => c.kind === 'lsp').map((c) => (c.body as { op: string }).op),
    [
      'definition',
      'typeDefinition',
      'implementation',
      'references',
      'incomingCalls',
      'outgoingCalls',
      'supertypes',
      'subtypes',
      'rename',
      'codeActions',
      'hover',
      'workspaceSymbols',
      'diagnostics',
    ],
  );
  // read_file reaches the files route's schema, a path that route refuses refused here too.
  assert.deepEqual(
    calls.filter((c) => c.kind === 'readFile').map((c) => c.body),
    [good.read_file],
  );
  for (const path of ['/etc/passwd', 'a/../../b', 'a\u0000b']) {
    await assert.rejects(
      callTool('read_file', { ...root, path }, runner, AbortSignal.timeout(1000)),
      (e: unknown) => e instanceof AppError && e.code === 'bad_request',
    );
  }
});

test('calls: unknown tool 400, unproved jail 503 not_ready, other org refused before running', async () => {
  const sig = AbortSignal.timeout(1000);
  await assert.rejects(callTool('lsp_nope', {}, runner, sig), (e: unknown) => e instanceof AppError && e.code === 'bad_request');
  const before = calls.length;
  await assert.rejects(
    callTool('lsp_locate', { ...root, org: 'other', symbol: 'x' }, runner, sig),
    (e: unknown) => e instanceof AppError && e.code === 'forbidden',
  );
  assert.equal(calls.length, before);
  await assert.rejects(callTool('lsp_symbols', root, runner, sig), (e: unknown) => e instanceof AppError && /query/.test(e.message));
});
