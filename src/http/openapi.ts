// The OpenAPI 3.1 document, generated: the routes are the ones fastify actually
// registered (collected by an onRoute hook, so a route nobody documented still
// appears), each with the doc and access rule it declares in its own options
// (route-options.ts), and every schema comes from src/api/schemas.ts (requests) or
// src/api/responses.ts (answers) through zod's own JSON Schema output. OpenAPI 3.1's
// schema dialect is JSON Schema 2020-12, which is what z.toJSONSchema emits, so
// the schemas go in unchanged. https://spec.openapis.org/oas/v3.1.0
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { askBatch, askQuery, checkQuery, diffQuery, lspQuery } from '../api/schemas.js';
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
} from '../api/responses.js';
import type { Access } from './auth.js';
import type { RouteDoc } from './route-options.js';

/** A route as fastify registered it, with what it declared in its options. */
export interface CollectedRoute {
  method: string;
  url: string;
  access?: Access;
  doc?: RouteDoc;
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

function operation(r: CollectedRoute): Record<string, unknown> {
  const { doc } = r;
  const op: Record<string, unknown> = {
    operationId: `${r.method.toLowerCase()}${r.url.replace(/[/:]+([a-zA-Z])/g, (_m, c: string) => c.toUpperCase()).replace(/[^A-Za-z0-9]/g, '')}`,
    summary: doc?.summary ?? `${r.method} ${r.url}`,
    tags: [doc?.tags[0] ?? 'other'],
  };
  if (doc?.description) op.description = doc.description;
  const params = [
    ...(doc?.pathParams ? parameters(doc.pathParams, 'path') : pathParamsOf(r.url)),
    ...(doc?.queryParams ? parameters(doc.queryParams, 'query') : []),
    ...(doc?.headerParams ? parameters(doc.headerParams, 'header') : []),
  ];
  if (params.length) op.parameters = params;
  if (doc?.requestBody === 'tar') {
    op.requestBody = {
      required: true,
      content: {
        'application/x-tar': { schema: { type: 'string', contentMediaType: 'application/x-tar' } },
        'application/gzip': { schema: { type: 'string', contentMediaType: 'application/gzip' } },
      },
    };
  } else if (doc?.requestBody) {
    const names = doc.requestBody;
    const oneOf = names.length > 1 ? { oneOf: names.map(ref) } : ref(names[0]!);
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
    (paths[path] ??= {})[r.method.toLowerCase()] = operation(r);
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
