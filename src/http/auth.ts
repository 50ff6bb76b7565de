// Bearer-token auth: the hooks that enforce the token set (src/tokens.ts) on
// every route, with 401 unauthorized / 403 forbidden per API.md.
//
// Enforcement: every route must declare an access rule, either in its route
// `config.access` or in `accessTable` below; a route that declares none makes
// buildServer throw, so a new route cannot ship unguarded by forgetting. The org is
// checked in onRequest when it is a URL param (before an upload body is read) and
// in preHandler when it is in the JSON body (after parsing, before the handler).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../errors.js';
import type { Logger } from '../log.js';
import { mayTouchOrg, type Permission, type Principal, type TokenSet } from '../tokens.js';

/**
 * How a route is guarded. `public`: no token (probes, metrics, docs). Otherwise a
 * token holding `permission` ('any': any valid token), and where the org is:
 * - `param`: the `:org` URL param, checked before the body is read;
 * - `body`: the `org` field of the JSON body, checked after parsing;
 * - `filter`: the answer lists several orgs' things; items of other orgs are dropped;
 * - `none`: the route touches no org's data (tool definitions, docs).
 */
export type Access = { public: true } | { public?: false; permission: Permission | 'any'; org: 'param' | 'body' | 'filter' | 'none' };

const PUBLIC: Access = { public: true };

/**
 * The access rule of each route, by `METHOD url` as fastify registers it (HEAD
 * routes follow their GET). This table is the only place a route's rule is said.
 * /docs is public on purpose: the document describes the contract every
 * deployment shares, carries no org data or configuration, and a browser or a
 * code generator opening it cannot easily attach a bearer header.
 */
export const accessTable: Readonly<Record<string, Access>> = {
  'GET /livez': PUBLIC,
  'GET /readyz': PUBLIC,
  'GET /metrics': PUBLIC,
  'GET /docs': PUBLIC,
  'GET /docs/json': PUBLIC,
  'PUT /v1/roots/:org/:repo/:sha': { permission: 'upload', org: 'param' },
  'GET /v1/roots/:org/:repo/:sha': { permission: 'read', org: 'param' },
  // Reading a root's files is reading the root: GET's rule.
  'GET /v1/roots/:org/:repo/:sha/files/*': { permission: 'read', org: 'param' },
  'DELETE /v1/roots/:org/:repo/:sha': { permission: 'delete', org: 'param' },
  'GET /v1/roots': { permission: 'read', org: 'filter' },
  'POST /v1/code/lsp': { permission: 'query', org: 'body' },
  'POST /ask': { permission: 'query', org: 'body' },
  'POST /v1/diff': { permission: 'query', org: 'body' },
  'POST /v1/check': { permission: 'query', org: 'body' },
  'GET /v1/tools': { permission: 'query', org: 'none' },
  // MCP carries the org inside each tool call's arguments, not at the top of the
  // body: the route checks each call's org itself (assertOrg), as /ask's batch does.
  'POST /mcp': { permission: 'query', org: 'none' },
  'GET /mcp': { permission: 'query', org: 'none' },
  'DELETE /mcp': { permission: 'query', org: 'none' },
};

// --- enforcement -----------------------------------------------------------

const principals = new WeakMap<FastifyRequest, Principal>();

/** The authenticated principal of a request (undefined when auth is off or the route is public). */
export function principalOf(req: FastifyRequest): Principal | undefined {
  return principals.get(req);
}

/**
 * For routes that find the org deeper than a param or `body.org` (a batch, an MCP
 * call): throws 403 unless the request's token may touch `org`. No-op when auth is off.
 */
export function assertOrg(req: FastifyRequest, org: string): void {
  const p = principals.get(req);
  if (p && !mayTouchOrg(p, org)) throw errors.forbidden(`This token may not touch org ${JSON.stringify(org)}.`);
}

/**
 * For a tool that mirrors a route needing more than the MCP route's `query` (read_file
 * is GET on a root's files: `read`): throws 403 unless the token holds it. No-op when auth is off.
 */
export function assertPermission(req: FastifyRequest, permission: Permission): void {
  const p = principals.get(req);
  if (p && !p.permissions.has(permission)) throw errors.forbidden(`This token does not have the ${permission} permission.`);
}

function accessOf(req: FastifyRequest): Access | undefined {
  return (req.routeOptions.config as { access?: Access } | undefined)?.access;
}

function bearer(req: FastifyRequest): string | undefined {
  const h = req.headers.authorization;
  if (typeof h !== 'string') return undefined;
  const m = /^Bearer[ ]+([^\s]+)\s*$/i.exec(h);
  return m?.[1];
}

function unauthorized(reply: FastifyReply): Error {
  // RFC 6750 §3: a 401 names the scheme the client should use.
  reply.header('www-authenticate', 'Bearer realm="lspd"');
  return errors.unauthorized('A valid bearer token is required.');
}

/**
 * Register the route check and, when `tokens` is given, the hooks. Must run
 * before any route is registered: onRoute only sees routes added after it.
 */
export function installAuth(app: FastifyInstance, tokens: TokenSet | undefined, log: Logger): void {
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    const rules = methods.map((m) => accessTable[`${m === 'HEAD' ? 'GET' : m} ${route.url}`]);
    const missing = methods.filter((_m, i) => rules[i] === undefined);
    if (missing.length > 0) {
      throw new Error(`route ${missing.join(',')} ${route.url} declares no access rule: give it a row in src/http/auth.ts accessTable`);
    }
    if (new Set(rules.map((r) => JSON.stringify(r))).size > 1) {
      throw new Error(`route ${methods.join(',')} ${route.url} has methods with different access rules: register them apart`);
    }
    route.config = { ...(route.config as object), access: rules[0] } as typeof route.config;
  });
  if (!tokens) return;

  const authLog = log.child({ mod: 'auth' });

  app.addHook('onRequest', async (req, reply) => {
    const access = accessOf(req);
    if (access?.public) return;
    const token = bearer(req);
    const p = token === undefined ? undefined : tokens.authenticate(token);
    if (!p) throw unauthorized(reply);
    principals.set(req, p);
    if (!access) return; // no such route: the 404 handler answers, to an authenticated caller only
    if (access.permission !== 'any' && !p.permissions.has(access.permission)) {
      authLog.debug({ token: p.name, route: req.routeOptions.url, need: access.permission }, 'permission refused');
      throw errors.forbidden(`This token does not have the ${access.permission} permission.`);
    }
    if (access.org === 'param') {
      const org = (req.params as { org?: unknown } | undefined)?.org;
      if (typeof org !== 'string' || !mayTouchOrg(p, org)) {
        authLog.debug({ token: p.name, route: req.routeOptions.url }, 'org refused');
        throw errors.forbidden(`This token may not touch org ${JSON.stringify(String(org))}.`);
      }
    }
  });

  // The body is parsed by now. A token limited to some orgs must see the org it
  // touches; a body that names none is refused rather than passed on unchecked.
  app.addHook('preHandler', async (req) => {
    const access = accessOf(req);
    const p = principals.get(req);
    if (!p || !access || access.public || access.org !== 'body' || p.orgs === '*') return;
    const org = (req.body as { org?: unknown } | null | undefined)?.org;
    if (typeof org !== 'string') throw errors.forbidden('This token is limited to some orgs and the request names none.');
    if (!mayTouchOrg(p, org)) throw errors.forbidden(`This token may not touch org ${JSON.stringify(org)}.`);
  });

  // Listings span orgs: drop the items of orgs the token may not touch.
  app.addHook('preSerialization', async (req, _reply, payload: unknown) => {
    const access = accessOf(req);
    const p = principals.get(req);
    if (!p || !access || access.public || access.org !== 'filter' || p.orgs === '*') return payload;
    if (!payload || typeof payload !== 'object' || !Array.isArray((payload as { roots?: unknown }).roots)) return payload;
    const body = payload as { roots: unknown[] };
    return { ...body, roots: body.roots.filter((item) => mayTouchOrg(p, itemOrg(item) ?? '\u0000')) };
  });
}

/** The org of a listed item: `{root: {org}}` or `{org}`. */
function itemOrg(item: unknown): string | undefined {
  if (!item || typeof item !== 'object') return undefined;
  const o = item as { org?: unknown; root?: { org?: unknown } };
  const org = o.root?.org ?? o.org;
  return typeof org === 'string' ? org : undefined;
}
