// What a route declares about itself, in its own fastify route options, so that a
// route is one place: `config.access` (its access rule, enforced by auth.ts, which
// refuses to register a route without one) and, in `schema`, its documentation
// (collected into the OpenAPI document by openapi.ts). The doc keys are not fastify's
// own (`body`, `params`, `querystring`, `headers`, `response`), so fastify compiles
// no validator or serializer from them: requests are validated by the zod schemas
// they name, in the handler, as before.
// Request state the hooks read (the metric labels, the token's principal) is a
// fastify request decoration, declared here.
import type { FastifyInstance, RouteShorthandOptions } from 'fastify';
import type { z } from 'zod';
import { PUBLIC, type Access } from './auth.js';
import { clientSignal } from './client-signal.js';
import { parse } from './error-handler.js';
import type { Principal } from '../tokens.js';

export interface Answer {
  description: string;
  /** A named component schema (openapi.ts `components`), or a content type with no JSON schema. */
  schema?: string;
  contentType?: string;
}

/** A route's documentation: an OpenAPI operation, in terms of the shared zod schemas. */
export interface RouteDoc {
  summary: string;
  description?: string;
  /** Its OpenAPI tag (trees, queries, operations). */
  tags: readonly [string];
  pathParams?: z.ZodObject;
  queryParams?: z.ZodObject;
  headerParams?: z.ZodObject;
  /** Named component schemas of the JSON body (one of them), or `tar` for the upload stream. */
  requestBody?: readonly string[] | 'tar';
  answers: Record<string, Answer>;
}

/** An error answer's doc. */
export const err = (description: string): Answer => ({ description, schema: 'Error' });

/** The access rule of a query a caller makes for the org its body names. */
export const QUERY_ACCESS: Access = { permission: 'query', org: 'body' };

/** The options of a public operations route (health, metrics, docs): no org data, so no bearer header. */
export function operationsRoute(summary: string, answers: RouteDoc['answers']): RouteShorthandOptions {
  return { config: { access: PUBLIC }, schema: { tags: ['operations'], summary, answers } };
}

/**
 * A POST answered by one service call: QUERY_ACCESS and `doc` in its options, the
 * body parsed with `body`, the op label set, the service given the client's signal.
 */
export function postQuery<Q>(
  app: FastifyInstance,
  path: string,
  doc: RouteDoc,
  body: z.ZodType<Q>,
  op: string,
  answer: (q: Q, signal: AbortSignal) => Promise<unknown>,
): void {
  app.post(path, { config: { access: QUERY_ACCESS }, schema: doc }, async (req, reply) => {
    req.lspdOp = op;
    return answer(parse(body, req.body), clientSignal(reply));
  });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
  }
  interface FastifySchema {
    summary?: RouteDoc['summary'];
    description?: RouteDoc['description'];
    tags?: RouteDoc['tags'];
    pathParams?: RouteDoc['pathParams'];
    queryParams?: RouteDoc['queryParams'];
    headerParams?: RouteDoc['headerParams'];
    requestBody?: RouteDoc['requestBody'];
    answers?: RouteDoc['answers'];
  }
  interface FastifyRequest {
    /** The op label of lspd_http_request_seconds (a known op, never a caller's string). */
    lspdOp: string;
    /** The server label of lspd_http_request_seconds. */
    lspdServer: string;
    /** The authenticated token (null when auth is off or the route is public). */
    principal: Principal | null;
  }
}

/** The request decorations above, with their defaults; before any hook or route reads them. */
export function decorateRequests(app: { decorateRequest(name: string, value: unknown): unknown }): void {
  app.decorateRequest('lspdOp', '');
  app.decorateRequest('lspdServer', '');
  app.decorateRequest('principal', null);
}
