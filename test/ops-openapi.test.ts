// The OpenAPI document a real daemon serves: structurally valid OpenAPI 3.1
// (checked with ajv against the subset of the 3.1 schema that matters here),
// every component a valid JSON Schema 2020-12, every route registered in
// src/http/routes/ present, every documented path served, real answers valid
// against their documented schemas, and /docs a self-contained page.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { projectDir, spawnDaemon, type Daemon } from './helpers/daemon.js';
import { SHA1, makeTar } from './helpers/ops.js';

/** What this test holds an OpenAPI 3.1 document to (a subset of the official schema). */
const openapiShape = {
  type: 'object',
  required: ['openapi', 'info', 'paths'],
  properties: {
    openapi: { type: 'string', pattern: '^3\\.1\\.\\d+$' },
    info: { type: 'object', required: ['title', 'version'], properties: { title: { type: 'string' }, version: { type: 'string' } } },
    jsonSchemaDialect: { type: 'string' },
    paths: {
      type: 'object',
      propertyNames: { pattern: '^/' },
      additionalProperties: {
        type: 'object',
        propertyNames: { enum: ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace', 'summary', 'description', 'parameters', 'servers'] },
        additionalProperties: { $ref: '#/$defs/operation' },
      },
    },
    components: {
      type: 'object',
      properties: {
        schemas: { type: 'object', additionalProperties: { type: ['object', 'boolean'] } },
        securitySchemes: { type: 'object', additionalProperties: { type: 'object', required: ['type'] } },
      },
    },
    security: { type: 'array', items: { type: 'object' } },
    tags: { type: 'array', items: { type: 'object', required: ['name'] } },
  },
  $defs: {
    operation: {
      type: 'object',
      required: ['responses'],
      properties: {
        operationId: { type: 'string' },
        summary: { type: 'string' },
        tags: { type: 'array', items: { type: 'string' } },
        parameters: {
          type: 'array',
          items: {
            type: 'object',
            required: ['name', 'in'],
            properties: { name: { type: 'string' }, in: { enum: ['path', 'query', 'header', 'cookie'] }, required: { type: 'boolean' } },
            if: { properties: { in: { const: 'path' } } },
            then: { required: ['required'], properties: { required: { const: true } } },
          },
        },
        requestBody: { type: 'object', required: ['content'], properties: { content: { type: 'object', minProperties: 1 } } },
        responses: {
          type: 'object',
          minProperties: 1,
          propertyNames: { pattern: '^([1-5]\\d\\d|[1-5]XX|default)$' },
          additionalProperties: { type: 'object', required: ['description'] },
        },
        security: { type: 'array' },
      },
    },
  },
};

type Doc = {
  paths: Record<string, Record<string, { parameters?: { name: string; in: string }[]; responses: Record<string, unknown> }>>;
  components: { schemas: Record<string, object> };
};

/** Routes registered in the route files: `app.get('/x'` and `app.put<...>(\n '/x'`. */
function routesInSource(): string[] {
  const dir = join(projectDir, 'src', 'http', 'routes');
  const out: string[] = [];
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))) {
    const text = readFileSync(join(dir, f), 'utf8');
    // A trailing wildcard is documented as the `{path}` parameter (the files route).
    for (const m of text.matchAll(/\bapp\.(get|put|post|delete|patch)(?:<[^>]*>)?\(\s*'([^']+)'/g))
      out.push(`${m[1]!.toUpperCase()} ${m[2]!.replace(/\/\*$/, '/:path')}`);
  }
  return out;
}

describe('OpenAPI document', () => {
  let d: Daemon;
  let doc: Doc;

  before(async () => {
    d = await spawnDaemon();
    const r = await fetch(`${d.url}/docs/json`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /application\/json/);
    doc = (await r.json()) as Doc;
  });
  after(async () => {
    await d?.stop();
    d?.cleanup();
  });

  it('is a structurally valid OpenAPI 3.1 document', () => {
    const ajv = new Ajv2020({ allErrors: true, strict: false });
    const validate = ajv.compile(openapiShape);
    assert.ok(validate(doc), ajv.errorsText(validate.errors));
    // Every {param} in a path is declared as a path parameter of each operation.
    for (const [path, ops] of Object.entries(doc.paths)) {
      const names = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      for (const [method, op] of Object.entries(ops)) {
        const declared = (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name);
        assert.deepEqual(declared.sort(), [...names].sort(), `${method} ${path}: path parameters`);
      }
    }
    // Every $ref points at a component that exists.
    const refs = [...JSON.stringify(doc).matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)].map((m) => m[1]!);
    for (const r of refs) assert.ok(r in doc.components.schemas, `dangling $ref ${r}`);
  });

  it('has component schemas that compile as JSON Schema 2020-12', () => {
    const ajv = new Ajv2020({ strict: false });
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      assert.doesNotThrow(() => ajv.compile(schema), `component ${name}`);
    }
    for (const name of ['LspQuery', 'AskQuery', 'AskBatch', 'Error', 'PutRootAnswer', 'RootAnswer', 'LspAnswer', 'ReadyAnswer']) {
      assert.ok(name in doc.components.schemas, `component ${name}`);
    }
  });

  it('lists every registered route, and serves every listed one', async () => {
    const documented = new Set(
      Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p.replace(/\{([^}]+)\}/g, ':$1')}`)),
    );
    const source = routesInSource();
    assert.ok(source.length >= 10, `found only ${source.length} routes in src/http/routes`);
    for (const r of source) assert.ok(documented.has(r), `${r} is registered but not in /docs/json`);
    for (const r of [
      'GET /livez',
      'GET /readyz',
      'GET /metrics',
      'PUT /v1/roots/:org/:repo/:sha',
      'GET /v1/roots/:org/:repo/:sha',
      'DELETE /v1/roots/:org/:repo/:sha',
      'GET /v1/roots',
      'POST /v1/code/lsp',
      'POST /ask',
      'GET /docs',
      'GET /docs/json',
    ]) {
      assert.ok(documented.has(r), `${r} (API.md) is not in /docs/json`);
    }
    for (const r of documented) {
      const [method, path] = r.split(' ') as [string, string];
      const url = path.replace(':org', 'acme').replace(':repo', 'api').replace(':sha', SHA1);
      // PUT is probed as GET: the same path, without storing anything.
      const post = method === 'POST';
      const res = await fetch(d.url + url, {
        method: method === 'PUT' ? 'GET' : method,
        headers: post ? { 'content-type': 'application/json' } : {},
        body: post ? '{}' : undefined,
      });
      const text = await res.text();
      if (res.status === 404) assert.doesNotMatch(text, /"no_such_route"/, `${r} is documented but not served`);
    }
  });

  it('describes real answers: /readyz, an upload, a root and an error validate against their schemas', async () => {
    const ajv = new Ajv2020({ strict: false });
    const check = (name: string, value: unknown) => {
      const v = ajv.compile(doc.components.schemas[name]!);
      assert.ok(v(value), `${name}: ${ajv.errorsText(v.errors)} in ${JSON.stringify(value)}`);
    };
    check('ReadyAnswer', await (await fetch(`${d.url}/readyz`)).json());
    const tar = await makeTar({ 'a.ts': 'export const a = 1;\n' });
    const put = await fetch(`${d.url}/v1/roots/acme/api/${SHA1}`, { method: 'PUT', headers: { 'content-type': 'application/x-tar' }, body: tar });
    assert.equal(put.status, 201);
    check('PutRootAnswer', await put.json());
    check('RootAnswer', await (await fetch(`${d.url}/v1/roots/acme/api/${SHA1}`)).json());
    check('RootList', await (await fetch(`${d.url}/v1/roots`)).json());
    const bad = await fetch(`${d.url}/v1/roots/acme/api/main`);
    assert.equal(bad.status, 400);
    check('Error', await bad.json());
  });

  it('renders /docs as one self-contained page listing every path', async () => {
    const r = await fetch(`${d.url}/docs`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /text\/html/);
    assert.match(r.headers.get('content-security-policy') ?? '', /default-src 'none'/);
    const html = await r.text();
    for (const p of Object.keys(doc.paths)) assert.ok(html.includes(`<code>${p}</code>`), `${p} missing from /docs`);
    // Nothing loaded from elsewhere: the machines have no internet.
    assert.doesNotMatch(html, /<script|<link|\bsrc=|href="https?:/i);
  });
});
