// A route declares itself: without an access rule it cannot be registered; with one
// and a doc, both reach auth and the OpenAPI document, and the doc's keys never make
// fastify validate or serialize anything.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Fastify from 'fastify';
import { installAuth } from './auth.js';
import { installDocs } from './routes/docs.js';
import { decorateRequests, err, type RouteDoc } from './route-options.js';
import { createLogger } from '../log.js';
import { orgName } from '../api/schemas.js';
import { z } from 'zod';

function app() {
  const a = Fastify();
  decorateRequests(a);
  installAuth(a, undefined, createLogger('silent'));
  installDocs(a);
  return a;
}

test('a route with no access rule is refused at registration, naming where to declare it', async () => {
  const a = app();
  await assert.rejects(async () => {
    a.get('/v1/undeclared', async () => ({}));
    await a.ready();
  }, /GET \/v1\/undeclared declares no access rule: give it config: \{ access \}/);
});

test("a route's access rule and doc are in the OpenAPI document; its doc validates nothing", async (t) => {
  const a = app();
  const doc: RouteDoc = {
    tags: ['queries'],
    summary: 'An example.',
    pathParams: z.object({ org: orgName }),
    requestBody: ['LspQuery'],
    answers: { '200': { description: 'Done.', schema: 'LspAnswer' }, '409': err('need_tree.') },
  };
  a.post<{ Params: { org: string } }>('/v1/example/:org', { config: { access: { permission: 'query', org: 'body' } }, schema: doc }, async (req) => {
    req.lspdOp = 'example';
    return { body: req.body, op: req.lspdOp, principal: req.principal };
  });
  const url = await a.listen({ host: '127.0.0.1', port: 0 });
  t.after(() => a.close());

  // The body is not LspQuery-shaped: fastify must not have compiled a validator from the doc.
  const r = await fetch(`${url}/v1/example/acme`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"anything":1}' });
  assert.equal(r.status, 200);
  assert.deepEqual(await r.json(), { body: { anything: 1 }, op: 'example', principal: null });

  const openapi = (await (await fetch(`${url}/docs/json`)).json()) as { paths: Record<string, Record<string, Record<string, unknown>>> };
  const op = openapi.paths['/v1/example/{org}']!.post!;
  assert.equal(op.summary, 'An example.');
  assert.deepEqual(op.tags, ['queries']);
  assert.equal(op['x-lspd-permission'], 'query');
  assert.deepEqual(
    (op.parameters as { name: string; in: string }[]).map((p) => [p.name, p.in]),
    [['org', 'path']],
  );
  assert.deepEqual(op.requestBody, { required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/LspQuery' } } } });
  assert.deepEqual(Object.keys(op.responses as object), ['200', '401', '403', '409', 'default']);
  // The docs routes declare themselves too: public, tagged.
  assert.deepEqual(openapi.paths['/docs/json']!.get!.security, []);
});
