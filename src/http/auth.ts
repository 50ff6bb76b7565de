// Bearer-token auth: the hooks that enforce the token set (src/tokens.ts) on
// every route, with 401 unauthorized / 403 forbidden per API.md.
//
// Enforcement: every route declares its access rule in its own route options
// (`config: { access }`, route-options.ts); a route that declares none makes
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

/** The rule of probes, metrics and docs. /docs is public on purpose: the document describes the
 * contract every deployment shares, carries no org data or configuration, and a browser or
 * a code generator opening it cannot easily attach a bearer header. */
export const PUBLIC: Access = { public: true };

// --- enforcement -----------------------------------------------------------

/** The authenticated principal of a request (undefined when auth is off or the route is public). */
export function principalOf(req: FastifyRequest): Principal | undefined {
  return req.principal ?? undefined;
}

/**
 * For routes that find the org deeper than a param or `body.org` (a batch, an MCP
 * call): throws 403 unless the request's token may touch `org`. No-op when auth is off.
 */
export function assertOrg(req: FastifyRequest, org: string): void {
  const p = req.principal;
  if (p && !mayTouchOrg(p, org)) throw errors.forbidden(`This token may not touch org ${JSON.stringify(org)}.`);
}

/**
 * For a tool that mirrors a route needing more than the MCP route's `query` (read_file
 * is GET on a root's files: `read`): throws 403 unless the token holds it. No-op when auth is off.
 */
export function assertPermission(req: FastifyRequest, permission: Permission): void {
  const p = req.principal;
  if (p && !p.permissions.has(permission)) throw errors.forbidden(`This token does not have the ${permission} permission.`);
}

function accessOf(req: FastifyRequest): Access | undefined {
  return req.routeOptions.config?.access;
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
    // A HEAD route fastify adds for a GET carries the GET's options.
    if (route.config?.access === undefined) {
      const methods = Array.isArray(route.method) ? route.method.join(',') : route.method;
      throw new Error(`route ${methods} ${route.url} declares no access rule: give it config: { access } in its route options`);
    }
  });
  if (!tokens) return;

  const authLog = log.child({ mod: 'auth' });

  app.addHook('onRequest', async (req, reply) => {
    const access = accessOf(req);
    if (access?.public) return;
    const token = bearer(req);
    const p = token === undefined ? undefined : tokens.authenticate(token);
    if (!p) throw unauthorized(reply);
    req.principal = p;
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
    const p = req.principal;
    if (!p || !access || access.public || access.org !== 'body' || p.orgs === '*') return;
    const org = (req.body as { org?: unknown } | null | undefined)?.org;
    if (typeof org !== 'string') throw errors.forbidden('This token is limited to some orgs and the request names none.');
    if (!mayTouchOrg(p, org)) throw errors.forbidden(`This token may not touch org ${JSON.stringify(org)}.`);
  });

  // Listings span orgs: drop the items of orgs the token may not touch.
  app.addHook('preSerialization', async (req, _reply, payload: unknown) => {
    const access = accessOf(req);
    const p = req.principal;
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
