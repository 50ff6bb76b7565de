// The zod schemas of every request body and path parameter. Routes validate with
// them, /v1/tools and OpenAPI are generated from them, and the typed client infers
// its types from them: one definition, so the four never drift apart.
import { z } from 'zod';
import { LANGUAGES } from '../languages.js';

export const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;
export const SHA_RE = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

export const orgName = z
  .string()
  .regex(NAME_RE)
  .refine((s) => s !== '.' && s !== '..')
  .describe('Organisation name: letters, digits, . _ -; 1-100 characters.');
export const repoName = orgName.describe('Repository name: letters, digits, . _ -; 1-100 characters.');
export const sha = z.string().regex(SHA_RE).describe('Commit sha: 40 or 64 lowercase hex digits (never a branch or tag).');

export const rootParams = z.object({ org: orgName, repo: repoName, sha });
export type RootKey = z.infer<typeof rootParams>;

/** A root-relative, /-separated path: no leading /, no `..` segment, no control characters. */
export const relPath = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => !p.startsWith('/') && !/[\u0000-\u001f\u007f]/.test(p), 'path must be relative and free of control characters')
  .refine((p) => !p.split('/').some((seg) => seg === '..'), 'path must not contain a .. segment')
  .refine((p) => !/^[A-Za-z]:[\\/]/.test(p) && !p.includes('\\'), 'path must use / separators')
  .describe('File path relative to the root of the tree, with / separators.');

export const encoding = z
  .enum(['utf-16', 'utf-8', 'codepoint'])
  .default('utf-16')
  .describe('Unit of `character` in positions given and returned: utf-16 code units (LSP default), utf-8 bytes, or Unicode code points.');

/** Call and type hierarchy ops: a graph of nodes walked from a position, `depth` levels deep. */
export const graphOps = ['incomingCalls', 'outgoingCalls', 'supertypes', 'subtypes'] as const;
export type GraphOp = (typeof graphOps)[number];
export const isGraphOp = (op: string): op is GraphOp => (graphOps as readonly string[]).includes(op);

export const lspOps = [
  'definition',
  'typeDefinition',
  'implementation',
  'references',
  'hover',
  'documentSymbols',
  'workspaceSymbols',
  'diagnostics',
  ...graphOps,
  'rename',
  'codeActions',
] as const;
export type LspOp = (typeof lspOps)[number];

/** The ops that answer edits as patches; /readyz lists them per server as `edit_ops`. */
export const editOps = ['rename', 'codeActions'] as const;
export type EditOp = (typeof editOps)[number];

/** LSP CodeActionKinds (`quickfix`, `refactor.extract`, `source.organizeImports`): dotted words, bounded. */
export const codeActionKinds = z
  .array(
    z
      .string()
      .max(64, 'a kind is at most 64 characters')
      .regex(/^[A-Za-z][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*$/, 'a kind is dotted words, as LSP CodeActionKind: quickfix, refactor.extract, source'),
  )
  .min(1)
  .max(16)
  .optional()
  .describe('codeActions: only actions of these kinds or their sub-kinds (quickfix, refactor, refactor.extract, source, source.organizeImports, …).');

/** A name a rename may give: letters, digits, `_` and `$` (PHP, JS), not starting with a digit; no spaces, dots or quotes. */
export const newName = z
  .string()
  .min(1, 'newName is empty')
  .max(256, 'newName is longer than 256 characters')
  .regex(/^[\p{L}_$][\p{L}\p{N}_$]*$/u, 'newName is not a name (letters, digits, _ or $, not starting with a digit)')
  .describe('rename: the new name.');

export const graphDepth = z
  .number()
  .int()
  .min(1)
  .max(3)
  .optional()
  .describe(
    'incomingCalls, outgoingCalls, supertypes, subtypes: levels walked from the position (1-3, default 1: direct callers, callees, super- or subtypes).',
  );

export const lspQuery = z
  .object({
    org: orgName,
    repo: repoName,
    sha,
    op: z.enum(lspOps).describe('The LSP operation.'),
    path: relPath.optional(),
    line: z.number().int().min(0).max(10_000_000).optional().describe('Zero-based line.'),
    character: z.number().int().min(0).max(10_000_000).optional().describe('Zero-based column, in `encoding` units.'),
    encoding,
    includeDeclaration: z.boolean().default(true).describe('references: include the declaration itself.'),
    query: z.string().max(512).optional().describe('Symbol name filter (workspaceSymbols: required; documentSymbols: optional).'),
    languages: z
      .array(z.enum(LANGUAGES))
      .min(1)
      .max(LANGUAGES.length)
      .optional()
      .describe("workspaceSymbols: ask only the servers of these languages (of the root's); default: every language the root holds."),
    context: z.number().int().min(0).max(20).default(0).describe('Lines of context around each location preview.'),
    limit: z.number().int().min(1).max(1000).optional().describe('Most locations to return in this page.'),
    cursor: z.string().max(200).optional().describe('Cursor from a previous truncated answer, to get the next page.'),
    depth: graphDepth,
    newName: newName.optional(),
    endLine: z.number().int().min(0).max(10_000_000).optional().describe("codeActions: the range's last line (default: line)."),
    endCharacter: z.number().int().min(0).max(10_000_000).optional().describe("codeActions: the range's end column (default: character)."),
    only: codeActionKinds,
  })
  .strict()
  .superRefine((q, ctx) => {
    const positional = ['definition', 'typeDefinition', 'implementation', 'references', 'hover', 'rename', 'codeActions'].includes(q.op) || isGraphOp(q.op);
    for (const f of ['endLine', 'endCharacter', 'only'] as const)
      if (q.op !== 'codeActions' && q[f] !== undefined) ctx.addIssue({ code: 'custom', message: `op ${q.op} takes no ${f}`, path: [f] });
    if ((q.endLine === undefined) !== (q.endCharacter === undefined))
      ctx.addIssue({ code: 'custom', message: 'endLine and endCharacter go together', path: [q.endLine === undefined ? 'endLine' : 'endCharacter'] });
    if (q.endLine !== undefined && q.line !== undefined && (q.endLine < q.line || (q.endLine === q.line && q.endCharacter! < q.character!)))
      ctx.addIssue({ code: 'custom', message: 'the range ends before it starts', path: ['endLine'] });
    if (q.op === 'rename' && q.newName === undefined) ctx.addIssue({ code: 'custom', message: 'rename needs newName', path: ['newName'] });
    if (q.op !== 'rename' && q.newName !== undefined) ctx.addIssue({ code: 'custom', message: `op ${q.op} takes no newName`, path: ['newName'] });
    if (q.depth !== undefined && !isGraphOp(q.op)) ctx.addIssue({ code: 'custom', message: `op ${q.op} takes no depth`, path: ['depth'] });
    if (q.op !== 'workspaceSymbols' && q.path === undefined) ctx.addIssue({ code: 'custom', message: `op ${q.op} needs a path`, path: ['path'] });
    if (q.op === 'workspaceSymbols' && q.path !== undefined) ctx.addIssue({ code: 'custom', message: 'workspaceSymbols takes no path', path: ['path'] });
    if (q.op === 'workspaceSymbols' && q.query === undefined) ctx.addIssue({ code: 'custom', message: 'workspaceSymbols needs a query', path: ['query'] });
    if (q.op !== 'workspaceSymbols' && q.languages !== undefined)
      ctx.addIssue({ code: 'custom', message: `op ${q.op} takes no languages (the path decides the server)`, path: ['languages'] });
    if (positional && (q.line === undefined || q.character === undefined))
      ctx.addIssue({ code: 'custom', message: `op ${q.op} needs line and character`, path: ['line'] });
  });
export type LspQuery = z.infer<typeof lspQuery>;

export const askOps = ['locate', 'references', 'hover', 'callers', 'callees', 'rename'] as const;
export const askQuery = z
  .object({
    org: orgName,
    repo: repoName,
    sha,
    symbol: z.string().min(1).max(512).describe('Plain or qualified name: Greet, dep.Greet, Server.close, pkg.mod.func.'),
    op: z
      .enum(askOps)
      .default('locate')
      .describe(
        'locate (where is it defined), references, hover, callers (incomingCalls at its definition), callees (outgoingCalls) or rename (a patch, with newName).',
      ),
    path: relPath.optional().describe('Optional file that scopes the search to where the name is used.'),
    encoding,
    context: z.number().int().min(0).max(20).default(0),
    grouped: z.boolean().default(false).describe('references: group locations by file with counts.'),
    depth: graphDepth.describe('callers, callees: levels walked (1-3, default 1).'),
    newName: newName.optional(),
    limit: z.number().int().min(1).max(1000).optional(),
    cursor: z.string().max(200).optional(),
  })
  .strict();
export type AskQuery = z.infer<typeof askQuery>;

export const askBatchItem = askQuery.omit({ org: true, repo: true, sha: true });
export const askBatch = z.object({ org: orgName, repo: repoName, sha, queries: z.array(z.unknown()).min(1).max(100) }).strict();

export const GIT_TREE_HEADER = 'x-lspd-git-tree';

/** PUT /v1/roots/{org}/{repo}/{sha}'s query. */
export const putRootQuery = z.object({
  base: sha
    .optional()
    .describe(
      'Incremental upload: the body is a layer over this stored root of the same org and repo (files added or modified since it; deletions as OCI whiteouts `dir/.wh.name`, `dir/.wh..wh..opq`). Not stored here: 409 need_tree naming it.',
    ),
  warm: z
    .enum(['true', 'false', '1', '0'])
    .optional()
    .describe(
      "false: do not start the root's sessions on upload. By default they start in the background once its fetch settled, so the first query finds them ready (GET shows them warming, then ready).",
    ),
});

/** PUT /v1/roots/{org}/{repo}/{sha}'s headers (beside Content-Type). */
export const putRootHeaders = z.object({
  [GIT_TREE_HEADER]: z
    .string()
    .regex(/^[0-9a-f]{40}$/)
    .optional()
    .describe(
      "The commit's git tree id (`git rev-parse <sha>^{tree}`, SHA-1 repositories): the stored tree must have it, else 422 tree_mismatch and nothing is stored.",
    ),
});

export const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  after: z.string().max(400).optional(),
});

/** Where GET .../files/{path} reads: the uploaded tree, or the root's fetched dependencies (an `external` location's `read`). */
export const readFrom = z
  .enum(['tree', 'deps'])
  .default('tree')
  .describe("tree: a path of the uploaded tree. deps: a path in the root's fetched dependencies, as an external location's `read` gives it.");
const lineBound = (what: string) => z.number().int().min(0).max(10_000_000).optional().describe(what);
const START = 'First line to read, zero-based (default 0).';
const END = 'Line to stop before, zero-based, exclusive (default: the end of the file).';

/** GET /v1/roots/{org}/{repo}/{sha}/files/{path}'s query: numbers arrive as strings. */
export const readFileQuery = z.object({
  from: readFrom,
  start: z.coerce.number().int().min(0).max(10_000_000).optional().describe(START),
  end: z.coerce.number().int().min(0).max(10_000_000).optional().describe(END),
});

/** The read_file tool's arguments: the route's path params and query in one object. */
export const readFileArgs = z
  .object({ org: orgName, repo: repoName, sha, path: relPath, from: readFrom, start: lineBound(START), end: lineBound(END) })
  .strict();
export type ReadFileArgs = z.infer<typeof readFileArgs>;

/** POST /v1/diff: what a change between two stored roots of one repo does. */
export const diffQuery = z
  .object({
    org: orgName,
    repo: repoName,
    base: sha.describe('The stored root the change starts from (e.g. the merge base).'),
    head: sha.describe('The stored root with the change (e.g. the pull request head).'),
    limit: z.number().int().min(1).max(1000).optional().describe('Most impact locations in this page.'),
    cursor: z.string().max(200).optional().describe('next_cursor of an answer with more: the next page (of files, symbols, diagnostics, then impact).'),
  })
  .strict();
export type DiffQuery = z.infer<typeof diffQuery>;

/** POST /v1/check: a patch checked against a stored root, in memory only. */
export const checkQuery = z
  .object({
    org: orgName,
    repo: repoName,
    sha: sha.describe('The stored root the patch applies to.'),
    // The byte bound is LSPD_MAX_PATCH_BYTES (413), checked by the service: the schema's is only the body's.
    patch: z
      .string()
      .min(1)
      .describe(
        'A unified diff (git diff, or diff -u with a/ and b/ paths) of modified, added and deleted files, relative to the root. It is never written anywhere.',
      ),
  })
  .strict();
export type CheckQuery = z.infer<typeof checkQuery>;
