// A precompiled check of the /v1/code/lsp body for its common shape (a positional or
// file op, none of the rarer fields), run before zod on every query. It returns the
// body as zod would parse it, or undefined whenever it is not sure, and zod then
// decides (and words the error): it can only accept less than zod does, never more,
// and zod stays the schema of record (OpenAPI, tools, the client's types).
// test/api-lsp-query-check.test.ts holds the agreement on valid and invalid bodies.
import { NAME_RE, SHA_RE, type LspQuery } from './schemas.js';

/** The ops the fast check takes: which need a position. */
const FAST_OPS = new Map<unknown, boolean>([
  ['definition', true],
  ['typeDefinition', true],
  ['implementation', true],
  ['references', true],
  ['hover', true],
  ['documentSymbols', false],
  ['diagnostics', false],
]);
const ENCODINGS = new Set<unknown>(['utf-16', 'utf-8', 'codepoint']);

const isName = (v: unknown): v is string => typeof v === 'string' && NAME_RE.test(v) && v !== '.' && v !== '..';
const isInt = (v: unknown, min: number, max: number): v is number => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
const isString = (v: unknown, max: number): v is string => typeof v === 'string' && v.length <= max;
const BAD_PATH = /[\u0000-\u001f\u007f\\]|^\/|^[A-Za-z]:\/|(^|\/)\.\.(\/|$)/;
const isPath = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= 4096 && !BAD_PATH.test(v);

/** The fields the fast check takes beside the root key, op and path, each with its test as the schema states it. */
const OPTIONAL = new Map<string, (v: unknown) => boolean>([
  ['line', (v) => isInt(v, 0, 10_000_000)],
  ['character', (v) => isInt(v, 0, 10_000_000)],
  ['encoding', (v) => ENCODINGS.has(v)],
  ['includeDeclaration', (v) => typeof v === 'boolean'],
  ['context', (v) => isInt(v, 0, 20)],
  ['query', (v) => isString(v, 512)],
  ['limit', (v) => isInt(v, 1, 1000)],
  ['cursor', (v) => isString(v, 200)],
]);
const KEY = new Set(['org', 'repo', 'sha', 'op', 'path']);

/** The parsed query when `body` is plainly valid; undefined: ask zod. */
export function fastLspQuery(body: unknown): LspQuery | undefined {
  if (typeof body !== 'object' || body === null || Object.getPrototypeOf(body) !== Object.prototype) return undefined;
  const b = body as Record<string, unknown>;
  const positional = FAST_OPS.get(b.op);
  if (positional === undefined || !isName(b.org) || !isName(b.repo) || typeof b.sha !== 'string' || !SHA_RE.test(b.sha) || !isPath(b.path)) return undefined;
  if (positional && (b.line === undefined || b.character === undefined)) return undefined;
  // zod's defaults, then every other field the body has, each checked.
  const q: Record<string, unknown> = { org: b.org, repo: b.repo, sha: b.sha, op: b.op, path: b.path, encoding: 'utf-16', includeDeclaration: true, context: 0 };
  for (const k in b) {
    if (KEY.has(k)) continue;
    const ok = OPTIONAL.get(k);
    if (!ok?.(b[k])) return undefined;
    q[k] = b[k];
  }
  return q as LspQuery;
}
