// A precompiled check of the /v1/code/lsp body for its common shape (a positional or
// file op, none of the rarer fields), run before zod on every query. It returns the
// body as zod would parse it, or undefined whenever it is not sure, and zod then
// decides (and words the error): it can only accept less than zod does, never more,
// and zod stays the schema of record (OpenAPI, tools, the client's types).
// test/api-lsp-query-check.test.ts holds the agreement on valid and invalid bodies.
import { NAME_RE, SHA_RE, type LspQuery } from './schemas.js';

/** The ops the fast check takes: which need a position. */
const FAST_OPS: Readonly<Record<string, boolean>> = {
  definition: true,
  typeDefinition: true,
  implementation: true,
  references: true,
  hover: true,
  documentSymbols: false,
  diagnostics: false,
};
const FIELDS = new Set(['org', 'repo', 'sha', 'op', 'path', 'line', 'character', 'encoding', 'includeDeclaration', 'context', 'query', 'limit', 'cursor']);
const ENCODINGS = new Set(['utf-16', 'utf-8', 'codepoint']);

const isName = (v: unknown): v is string => typeof v === 'string' && NAME_RE.test(v) && v !== '.' && v !== '..';
const isInt = (v: unknown, min: number, max: number): v is number => typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max;
const BAD_PATH = /[\u0000-\u001f\u007f\\]|^\/|^[A-Za-z]:\/|(^|\/)\.\.(\/|$)/;
const isPath = (v: unknown): v is string => typeof v === 'string' && v.length >= 1 && v.length <= 4096 && !BAD_PATH.test(v);

/** The parsed query when `body` is plainly valid; undefined: ask zod. */
export function fastLspQuery(body: unknown): LspQuery | undefined {
  if (typeof body !== 'object' || body === null || Object.getPrototypeOf(body) !== Object.prototype) return undefined;
  const b = body as Record<string, unknown>;
  for (const k in b) if (!FIELDS.has(k)) return undefined;
  const positional = FAST_OPS[b.op as string];
  if (positional === undefined || !Object.hasOwn(FAST_OPS, b.op as string)) return undefined;
  if (!isName(b.org) || !isName(b.repo) || typeof b.sha !== 'string' || !SHA_RE.test(b.sha) || !isPath(b.path)) return undefined;
  const q: LspQuery = {
    org: b.org,
    repo: b.repo,
    sha: b.sha,
    op: b.op as LspQuery['op'],
    path: b.path,
    encoding: 'utf-16',
    includeDeclaration: true,
    context: 0,
  };
  if (b.line !== undefined || positional) {
    if (!isInt(b.line, 0, 10_000_000)) return undefined;
    q.line = b.line;
  }
  if (b.character !== undefined || positional) {
    if (!isInt(b.character, 0, 10_000_000)) return undefined;
    q.character = b.character;
  }
  if (b.encoding !== undefined) {
    if (typeof b.encoding !== 'string' || !ENCODINGS.has(b.encoding)) return undefined;
    q.encoding = b.encoding as LspQuery['encoding'];
  }
  if (b.includeDeclaration !== undefined) {
    if (typeof b.includeDeclaration !== 'boolean') return undefined;
    q.includeDeclaration = b.includeDeclaration;
  }
  if (b.context !== undefined) {
    if (!isInt(b.context, 0, 20)) return undefined;
    q.context = b.context;
  }
  if (b.query !== undefined) {
    if (typeof b.query !== 'string' || b.query.length > 512) return undefined;
    q.query = b.query;
  }
  if (b.limit !== undefined) {
    if (!isInt(b.limit, 1, 1000)) return undefined;
    q.limit = b.limit;
  }
  if (b.cursor !== undefined) {
    if (typeof b.cursor !== 'string' || b.cursor.length > 200) return undefined;
    q.cursor = b.cursor;
  }
  return q;
}
