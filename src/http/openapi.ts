// The OpenAPI 3.1 document, generated: the routes are the ones fastify actually
// registered (collected by an onRoute hook, so a route nobody documented still
// appears), and every schema comes from src/schemas.ts (requests) or
// src/responses.ts (answers) through zod's own JSON Schema output. OpenAPI 3.1's
// schema dialect is JSON Schema 2020-12, which is what z.toJSONSchema emits, so
// the schemas go in unchanged. https://spec.openapis.org/oas/v3.1.0
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import {
  askBatch,
  askQuery,
  checkQuery,
  diffQuery,
  listQuery,
  lspQuery,
  putRootHeaders,
  putRootQuery,
  readFileQuery,
  relPath,
  rootParams,
} from '../schemas.js';
import {
  askBatchAnswer,
  checkAnswer,
  diffAnswer,
  errorBody,
  fileAnswer,
  lspAnswer,
  putRootAnswer,
  readyAnswer,
  rootAnswer,
  rootList,
  toolsAnswer,
} from '../responses.js';
import type { Access } from './auth.js';

export interface CollectedRoute {
  method: string;
  url: string;
  access?: Access;
}

interface Answer {
  description: string;
  /** A named component schema, or a content type with no JSON schema. */
  schema?: string;
  contentType?: string;
}

interface RouteDoc {
  summary: string;
  description?: string;
  tag: string;
  params?: z.ZodObject;
  query?: z.ZodObject;
  headers?: z.ZodObject;
  /** A named component schema, or `tar` for the upload stream. */
  body?: string | 'tar';
  answers: Record<string, Answer>;
}

/** Named schemas, published under components.schemas. `io` says which side of a transform/default to describe. */
const components: Record<string, { schema: z.ZodType; io: 'input' | 'output' }> = {
  LspQuery: { schema: lspQuery, io: 'input' },
  AskQuery: { schema: askQuery, io: 'input' },
  AskBatch: { schema: askBatch, io: 'input' },
  DiffQuery: { schema: diffQuery, io: 'input' },
  CheckQuery: { schema: checkQuery, io: 'input' },
  Error: { schema: errorBody, io: 'output' },
  PutRootAnswer: { schema: putRootAnswer, io: 'output' },
  RootAnswer: { schema: rootAnswer, io: 'output' },
  RootList: { schema: rootList, io: 'output' },
  LspAnswer: { schema: lspAnswer, io: 'output' },
  AskBatchAnswer: { schema: askBatchAnswer, io: 'output' },
  DiffAnswer: { schema: diffAnswer, io: 'output' },
  CheckAnswer: { schema: checkAnswer, io: 'output' },
  ReadyAnswer: { schema: readyAnswer, io: 'output' },
  ToolsAnswer: { schema: toolsAnswer, io: 'output' },
  FileAnswer: { schema: fileAnswer, io: 'output' },
};

const err = (description: string): Answer => ({ description, schema: 'Error' });

/** What each route of API.md is, keyed `METHOD url` as registered. */
export const routeDocs: Readonly<Record<string, RouteDoc>> = {
  'GET /livez': { tag: 'operations', summary: 'Liveness: 200 while the process runs.', answers: { '200': { description: 'Alive.' } } },
  'GET /readyz': {
    tag: 'operations',
    summary: 'Readiness: 200 only when the boot canary proved both jail phases and the store is writable.',
    answers: { '200': { description: 'Ready.', schema: 'ReadyAnswer' }, '503': { description: 'Not ready; `reason` says why.', schema: 'ReadyAnswer' } },
  },
  'GET /metrics': {
    tag: 'operations',
    summary: 'Prometheus metrics (text exposition format).',
    answers: { '200': { description: 'Metrics.', contentType: 'text/plain' } },
  },
  'GET /docs': { tag: 'operations', summary: 'This document, rendered as HTML.', answers: { '200': { description: 'HTML.', contentType: 'text/html' } } },
  'GET /docs/json': {
    tag: 'operations',
    summary: 'This document (OpenAPI 3.1, JSON).',
    answers: { '200': { description: 'OpenAPI document.', contentType: 'application/json' } },
  },
  'PUT /v1/roots/:org/:repo/:sha': {
    tag: 'trees',
    summary: "Upload the tree of a root as a tar (or gzip'd tar) stream.",
    description:
      "All or nothing: the root becomes visible only once the whole tar is stored. Immutable: uploading an existing root answers 200 with created=false and changes nothing. `git archive --format=tar <sha>` output works as is. With `?base=`, the tar is a layer over that stored root (files added or modified; deletions as OCI whiteouts): the new root is composed from the base's files (hard links) and the layer, checked whole like a full upload. With `x-lspd-git-tree`, the stored tree must be that git tree.",
    params: rootParams,
    query: putRootQuery,
    headers: putRootHeaders,
    body: 'tar',
    answers: {
      '201': { description: 'Stored.', schema: 'PutRootAnswer' },
      '200': { description: 'Already stored; nothing changed.', schema: 'PutRootAnswer' },
      '400': err('bad_sha, bad_name, bad_archive, or bad_request (x-lspd-git-tree is not a SHA-1 tree id).'),
      '409': err('need_tree: the `base` root is not stored here (`root` names it); upload the whole tree.'),
      '413': err('too_large: past the bytes, files or single-file limit.'),
      '415': err('unsupported_media_type.'),
      '422': err(
        'unsafe_entry: the tar holds an entry that could escape the root (or a layer that conflicts with its base); tree_mismatch: the tree is not the git tree x-lspd-git-tree names (`expected`, `computed`); nothing stored.',
      ),
      '507': err('insufficient_storage.'),
    },
  },
  'GET /v1/roots/:org/:repo/:sha': {
    tag: 'trees',
    summary: 'Describe a stored root: size, languages, dependency fetch state, sessions.',
    params: rootParams,
    answers: { '200': { description: 'The root.', schema: 'RootAnswer' }, '400': err('bad_sha or bad_name.'), '404': err('not_found (need: tree).') },
  },
  'GET /v1/roots/:org/:repo/:sha/files/*': {
    tag: 'trees',
    summary: "Read lines of a stored file: the tree's, or (from=deps) a fetched dependency's at an external location's `read` path.",
    description:
      'Lines are zero-based, `end` exclusive, counted as LSP counts them (\\n, \\r\\n and \\r each end a line); `text` keeps the terminators. The answer is bounded by LSPD_MAX_ANSWER_BYTES: `truncated` when it was cut (at a line boundary; a single line larger than the bound is cut inside and marked `partial`). A link may point elsewhere inside the tree (or inside a dependency), never out. `{path}` may hold `/`.',
    params: rootParams.extend({ path: relPath }),
    query: readFileQuery,
    answers: {
      '200': { description: 'The lines.', schema: 'FileAnswer' },
      '400': err('bad_sha or bad_name (the root key), else bad_request: an absolute path, a `..` segment, a control character, end before start.'),
      '404': err('not_found (need: tree): no such root; no_such_file: no such file (or it leads outside the root).'),
      '413': err('file_too_large: past LSPD_MAX_FILE_BYTES.'),
      '415': err('not_utf8.'),
      '503': err('busy (with retry_after): LSPD_MAX_FILE_READS reads are running, or this org already holds its fair share of them.'),
    },
  },
  'DELETE /v1/roots/:org/:repo/:sha': {
    tag: 'trees',
    summary: 'Delete a root: stop its sessions, remove its files and dependency cache.',
    params: rootParams,
    answers: { '204': { description: 'Deleted.' }, '400': err('bad_sha or bad_name.'), '404': err('not_found.') },
  },
  'GET /v1/roots': {
    tag: 'trees',
    summary: 'List stored roots, paged (a token limited to some orgs sees only theirs).',
    query: listQuery,
    answers: { '200': { description: 'A page of roots.', schema: 'RootList' } },
  },
  'POST /v1/code/lsp': {
    tag: 'queries',
    summary: 'A position-based LSP operation on a root.',
    description:
      'op is one of definition, typeDefinition, implementation, references, hover, documentSymbols, workspaceSymbols, diagnostics, or a call or type hierarchy: incomingCalls, outgoingCalls, supertypes, subtypes (with depth 1-3; answered as `nodes`). Positional ops need path, line and character; workspaceSymbols needs query and no path. Everything a server produced is labelled untrusted.',
    body: 'LspQuery',
    answers: {
      '200': { description: 'The answer (fields by op).', schema: 'LspAnswer' },
      '400': err('bad_sha or bad_name (the root key), else bad_request: schema, path or position.'),
      '404': err('no_such_file.'),
      '409': err('need_tree: upload the root, then retry.'),
      '413': err('file_too_large.'),
      '415': err('not_utf8.'),
      '422': err('no_server for that file, or its server does not answer that op (e.g. a hierarchy it lacks).'),
      '503': err('not_ready (jail not proved), server_unavailable or busy (Retry-After).'),
      '504': err('timeout.'),
    },
  },
  'POST /ask': {
    tag: 'queries',
    summary: 'A name-based question (locate, references, hover, callers, callees) about a symbol, or a batch of them.',
    body: 'AskQuery',
    answers: {
      '200': { description: 'The answer, like /v1/code/lsp plus matches; a batch answers {answers: [...]}.', schema: 'LspAnswer' },
      '400': err('bad_sha or bad_name (the root key), else bad_request.'),
      '404': err('symbol_not_found.'),
      '409': err('need_tree: upload the root, then retry.'),
      '503': err('not_ready, server_unavailable or busy.'),
      '504': err('timeout.'),
    },
  },
  'POST /v1/diff': {
    tag: 'queries',
    summary: 'What a change between two stored roots of a repo does: files, symbols, the references it may break, the diagnostics it brings.',
    description:
      "files from the two trees' indexes; symbols (added, removed, changed) of modified and removed source files by qualified name; impact: references at base to removed or changed symbols outside the lines the change rewrote, paged (limit, cursor); diagnostics at head in changed and impacted files less those base had (file, message and code). Complete answers are cached; everything a server produced is labelled untrusted.",
    body: 'DiffQuery',
    answers: {
      '200': { description: 'The diff.', schema: 'DiffAnswer' },
      '400': err('bad_sha or bad_name, else bad_request (a bad cursor).'),
      '409': err('need_tree: base or head is not stored (`root` and `missing` name it); upload it, then retry.'),
      '503': err('not_ready, server_unavailable or busy (Retry-After).'),
      '504': err('timeout: the diff did not finish within the query deadline.'),
    },
  },
  'POST /v1/check': {
    tag: 'queries',
    summary: 'A patch checked against a stored root in memory only: the diagnostics it adds and removes.',
    description:
      "patch (a unified diff of modified, added and deleted files) is applied to the root's files in memory; the changed files and the files referencing their top-level declarations are checked on a scratch language-server session no other query uses, and every change is undone after. new and fixed are matched by file, message and code (never line). Nothing is written anywhere.",
    body: 'CheckQuery',
    answers: {
      '200': { description: 'What the patch changes in diagnostics.', schema: 'CheckAnswer' },
      '400': err('bad_sha or bad_name, else bad_request: the patch cannot be read (`line` names where), or a path in it leaves the root.'),
      '409': err('need_tree: the root is not stored; upload it, then retry.'),
      '413': err(
        'too_large: the patch is past LSPD_MAX_PATCH_BYTES, LSPD_MAX_PATCH_FILES or LSPD_MAX_PATCH_HUNKS; or a changed file past the target-file bound.',
      ),
      '422': err("patch_does_not_apply: a hunk's old lines are not in the file (`path`, `hunk`), or a file it modifies is missing, or one it adds exists."),
      '503': err('not_ready, server_unavailable or busy (Retry-After).'),
      '504': err('timeout: the check did not finish within the query deadline.'),
    },
  },
  'GET /v1/tools': {
    tag: 'queries',
    summary: 'Tool definitions (name, description, JSON Schema of the input) for LLM agents.',
    answers: { '200': { description: 'The tools.', schema: 'ToolsAnswer' } },
  },
};

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): Record<string, unknown> {
  // unrepresentable: 'any' — refinements (e.g. "workspaceSymbols takes no path")
  // have no JSON Schema form; the route descriptions state them in words.
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

function parameters(obj: z.ZodObject, where: 'path' | 'query' | 'header'): Record<string, unknown>[] {
  const js = jsonSchema(obj, 'input') as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
  return Object.entries(js.properties ?? {}).map(([name, schema]) => ({
    name,
    in: where,
    required: where === 'path' || (js.required ?? []).includes(name),
    ...(typeof schema.description === 'string' ? { description: schema.description } : {}),
    schema,
  }));
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });

function operation(r: CollectedRoute, doc: RouteDoc | undefined): Record<string, unknown> {
  const op: Record<string, unknown> = {
    operationId: `${r.method.toLowerCase()}${r.url.replace(/[/:]+([a-zA-Z])/g, (_m, c: string) => c.toUpperCase()).replace(/[^A-Za-z0-9]/g, '')}`,
    summary: doc?.summary ?? `${r.method} ${r.url}`,
    tags: [doc?.tag ?? 'other'],
  };
  if (doc?.description) op.description = doc.description;
  const params = [
    ...(doc?.params ? parameters(doc.params, 'path') : pathParamsOf(r.url)),
    ...(doc?.query ? parameters(doc.query, 'query') : []),
    ...(doc?.headers ? parameters(doc.headers, 'header') : []),
  ];
  if (params.length) op.parameters = params;
  if (doc?.body === 'tar') {
    op.requestBody = {
      required: true,
      content: {
        'application/x-tar': { schema: { type: 'string', contentMediaType: 'application/x-tar' } },
        'application/gzip': { schema: { type: 'string', contentMediaType: 'application/gzip' } },
      },
    };
  } else if (doc?.body) {
    const oneOf = r.url === '/ask' ? { oneOf: [ref('AskQuery'), ref('AskBatch')] } : ref(doc.body);
    op.requestBody = { required: true, content: { 'application/json': { schema: oneOf } } };
  }
  const responses: Record<string, unknown> = {};
  for (const [status, a] of Object.entries(doc?.answers ?? { '200': { description: 'OK.' } })) {
    const content = a.schema
      ? { 'application/json': { schema: ref(a.schema) } }
      : a.contentType
        ? { [a.contentType]: { schema: a.contentType === 'application/json' ? { type: 'object' } : { type: 'string' } } }
        : undefined;
    responses[status] = { description: a.description, ...(content ? { content } : {}) };
  }
  if (r.access && !r.access.public) {
    responses['401'] ??= { description: 'unauthorized: no or unknown bearer token.', content: { 'application/json': { schema: ref('Error') } } };
    responses['403'] ??= { description: 'forbidden: the token lacks the permission or the org.', content: { 'application/json': { schema: ref('Error') } } };
  }
  responses.default = { description: 'Any other error.', content: { 'application/json': { schema: ref('Error') } } };
  op.responses = responses;
  // Public routes opt out of the document-wide bearer requirement.
  if (r.access?.public) op.security = [];
  else if (r.access) op['x-lspd-permission'] = r.access.permission;
  return op;
}

/** Path params of an undocumented route, so the document stays valid (every {x} in a path must be declared). */
function pathParamsOf(url: string): Record<string, unknown>[] {
  return [...url.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
}

export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
  return pkg.version ?? '0.0.0';
}

/** The document for the routes fastify registered (HEAD twins and duplicates skipped). */
export function buildOpenApi(routes: CollectedRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    if (r.method === 'HEAD' || r.method === 'OPTIONS') continue;
    // A trailing wildcard (the files route) is its `path` parameter.
    const path = r.url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\/\*$/, '/{path}');
    (paths[path] ??= {})[r.method.toLowerCase()] = operation(r, routeDocs[`${r.method} ${r.url}`]);
  }
  const schemas: Record<string, unknown> = {};
  for (const [name, c] of Object.entries(components)) schemas[name] = jsonSchema(c.schema, c.io);
  return {
    openapi: '3.1.0',
    info: {
      title: 'lspd',
      version: packageVersion(),
      description: 'Jailed, pooled language servers over HTTP for any commit of any repository.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    tags: [
      { name: 'trees', description: 'Upload, inspect and delete roots (org, repo, sha).' },
      { name: 'queries', description: 'Code intelligence over a stored root.' },
      { name: 'operations', description: 'Probes, metrics and this document.' },
      { name: 'other', description: 'Routes without a written description.' },
    ],
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      schemas,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A token from the tokens file (LSPD_TOKENS).' } },
    },
    security: [{ bearer: [] }],
  };
}
