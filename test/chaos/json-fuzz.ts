// Seeded generator of hostile bodies for every JSON route (POST /v1/code/lsp,
// POST /ask, POST /mcp) and of query strings for GET /v1/roots: valid requests
// about a real root with one to three fields replaced by random JSON (wrong types,
// huge numbers, unicode, lone surrogates, deep nesting), fields dropped or added,
// whole bodies replaced, and raw bodies that are not JSON at all.
import type { Call } from './harness.js';
import { int, pick } from './harness.js';
import type { Root } from './daemons.js';

const STRINGS = [
  '',
  ' ',
  'a'.repeat(10_000),
  'src/app.ts',
  'src/greet.ts',
  'src/../src/app.ts',
  'src//app.ts',
  './src/app.ts',
  'src/app.ts/',
  'src',
  '.',
  '..',
  '/etc/passwd',
  '../../etc/passwd',
  'C:\\x.ts',
  'src\\app.ts',
  '%2e%2e/x.ts',
  'file:///etc/passwd',
  'x\u0000.ts',
  '\u0007',
  'é',
  '𝒳.ts',
  '\u202e',
  '\ud800',
  '\udfff',
  'src/app.ts\ud800',
  '<script>alert(1)</script>',
  'definition',
  'hover',
  'references',
  'workspaceSymbols',
  'utf-8',
  'codepoint',
  'Person',
  'greet',
  'Person.greet',
  '__proto__',
  'constructor',
  'a/'.repeat(2500),
  '0'.repeat(40),
  'f'.repeat(64),
  'F'.repeat(40),
  'main',
  'HEAD',
];
const NUMBERS = [0, -1, 1, 2, 3, 7, 1.5, -0, 1e308, -1e308, 2 ** 31, 2 ** 53 + 1, 10_000_001, Number.MIN_VALUE, 65_535];

function value(r: () => number, depth = 0): unknown {
  switch (int(r, 0, depth > 3 ? 4 : 7)) {
    case 0:
      return null;
    case 1:
      return r() < 0.5;
    case 2:
      return pick(r, NUMBERS);
    case 3:
    case 4:
      return pick(r, STRINGS);
    case 5:
      return Array.from({ length: int(r, 0, 4) }, () => value(r, depth + 1));
    case 6: {
      const o: Record<string, unknown> = {};
      for (let k = int(r, 0, 4); k > 0; k--)
        o[pick(r, ['org', 'repo', 'sha', 'op', 'path', 'line', 'x', 'queries', 'symbol', 'name', 'arguments', '0'])] = value(r, depth + 1);
      return o;
    }
    default:
      return nest(int(r, 10, 2000), r() < 0.5 ? '[' : '{"a":', r() < 0.5 ? ']' : '}');
  }
}

/** Nesting as a parsed value (arrays or objects, `depth` deep), built without recursion. */
function nest(depth: number, open: string, close: string): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = open === '[' ? [v] : { a: v };
  void close;
  return v;
}

type Body = Record<string, unknown>;

function templates(root: Root): { path: string; jsonRpc?: boolean; body: Body }[] {
  const base = { org: root.org, repo: root.repo, sha: root.sha };
  return [
    { path: '/v1/code/lsp', body: { ...base, op: 'definition', path: 'src/app.ts', line: 2, character: 10 } },
    { path: '/v1/code/lsp', body: { ...base, op: 'references', path: 'src/greet.ts', line: 1, character: 17, limit: 2, context: 1 } },
    { path: '/v1/code/lsp', body: { ...base, op: 'workspaceSymbols', query: 'Person' } },
    { path: '/ask', body: { ...base, symbol: 'Person' } },
    { path: '/ask', body: { ...base, queries: [{ symbol: 'greet' }, { symbol: 'Person', op: 'hover' }] } },
    {
      path: '/mcp',
      jsonRpc: true,
      body: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'lsp_locate', arguments: { ...base, symbol: 'Person' } } },
    },
    {
      path: '/mcp',
      jsonRpc: true,
      body: {
        jsonrpc: '2.0',
        id: 2,
        method: 'tools/call',
        params: { name: 'lsp_definition', arguments: { ...base, path: 'src/app.ts', line: 2, character: 10 } },
      },
    },
    { path: '/mcp', jsonRpc: true, body: { jsonrpc: '2.0', id: 3, method: 'tools/list' } },
  ];
}

/** Every path to a value inside `v` (objects and arrays), the root included as []. */
function paths(v: unknown, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  out.push(at);
  if (out.length > 64) return out;
  if (Array.isArray(v)) for (let i = 0; i < v.length; i++) paths(v[i], [...at, i], out);
  else if (typeof v === 'object' && v !== null) for (const [k, x] of Object.entries(v)) paths(x, [...at, k], out);
  return out;
}

function mutate(r: () => number, body: Body): unknown {
  let doc: unknown = structuredClone(body);
  for (let m = int(r, 1, 3); m > 0; m--) {
    const all = paths(doc);
    const p = pick(r, all);
    const op = int(r, 0, 3);
    if (p.length === 0) {
      doc = op === 0 ? [doc] : value(r);
      continue;
    }
    const parent = p.slice(0, -1).reduce<unknown>((o, k) => (o as Record<string | number, unknown>)[k], doc) as Record<string | number, unknown>;
    const key = p[p.length - 1]!;
    if (typeof parent !== 'object' || parent === null) continue;
    // defineProperty: an own "__proto__" key (sent as JSON) rather than a new prototype.
    const set = (k: string | number, v: unknown) => Object.defineProperty(parent, k, { value: v, enumerable: true, writable: true, configurable: true });
    if (op === 0) delete parent[key];
    else if (op === 1) set(pick(r, ['extra', 'line', 'character', 'encoding', 'limit', 'cursor', '__proto__']), value(r));
    else set(key, value(r));
  }
  return doc;
}

/** Raw bodies that are not a well-formed JSON document, with the content type they are sent as. */
function rawBody(r: () => number, body: Body): { raw: Buffer; type: string } {
  const text = JSON.stringify(body);
  const variants = [
    () => text.slice(0, int(r, 0, text.length - 1)),
    () => '['.repeat(100_000) + ']'.repeat(100_000),
    () => '{"a":'.repeat(50_000) + '1' + '}'.repeat(50_000),
    () => text.replace('{', '{"__proto__":{"polluted":1},'),
    () => text.replace('{', '{"constructor":{"prototype":{"polluted":1}},'),
    () => text.replace(/"line":\d+/, '"line":1e400').replace(/"id":\d+/, '"id":1e400'),
    () => '\ufeff' + text,
    () => text.replace('"', '"\\ud800'),
    () => '',
    () => 'null',
    () => '"just a string"',
    () => String(pick(r, NUMBERS)),
    () => '[' + text + ']',
    () => text + text,
    () => Buffer.from(Array.from({ length: int(r, 1, 300) }, () => Math.floor(r() * 256))).toString('latin1'),
    () => 'x'.repeat(1_100_000),
  ];
  const raw = Buffer.from(pick(r, variants)(), 'utf8');
  const type = pick(r, [
    'application/json',
    'application/json',
    'application/json',
    'application/json; charset=utf-8',
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/json; charset=utf-16',
  ]);
  return { raw, type };
}

/** Percent-encoded, a lone surrogate as the bytes a careless encoder would send (CESU-8). */
function uriPart(s: string): string {
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80';
  }
}

/** The i-th JSON-route case for generator `r`. */
export function jsonCase(r: () => number, root: Root): Call & { kind: string } {
  const roll = r();
  if (roll < 0.08) {
    const q = pick(r, [
      'limit=0',
      'limit=-1',
      'limit=1e400',
      'limit=abc',
      'limit=1001',
      'limit=5&after=' + uriPart(pick(r, STRINGS)),
      'after=%ff',
      'limit[]=1',
      'limit=1&limit=2',
      '',
    ]);
    return { kind: 'GET /v1/roots query', method: 'GET', path: `/v1/roots?${q}` };
  }
  const t = pick(r, templates(root));
  const rpc = t.jsonRpc ? { jsonRpc: true } : {};
  if (roll < 0.3) {
    const { raw, type } = rawBody(r, t.body);
    return { kind: `${t.path} raw`, method: 'POST', path: t.path, raw, headers: { 'content-type': type }, ...rpc };
  }
  return { kind: `${t.path} mutated`, method: 'POST', path: t.path, json: mutate(r, t.body), ...rpc };
}
