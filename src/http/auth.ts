// Bearer-token auth: the tokens file, who may touch which org with which
// permission, and the hooks that enforce it on every route.
//
// The tokens file (LSPD_TOKENS) is JSON:
//   {"tokens": [{"name": "ci-acme", "sha256": "<64 hex>", "orgs": ["acme"],
//                "permissions": ["upload", "query", "read"]}]}
// Only the sha256 of a token is stored, so a leaked file (a backup, a ConfigMap
// printed in a ticket) grants nothing. Tokens are minted high-entropy
// (`lspd token new`), which is why a plain unsalted hash is enough: there is no
// dictionary to attack. The file is read at start (a bad file refuses to start) and
// on SIGHUP (a bad file keeps the previous tokens and logs an error).
//
// Enforcement: every route must declare an access rule, either in its route
// `config.access` or in `accessTable` below; a route that declares none makes
// buildServer throw, so a new route cannot ship unguarded by forgetting. The org is
// checked in onRequest when it is a URL param (before an upload body is read) and
// in preHandler when it is in the JSON body (after parsing, before the handler).
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { errors } from '../errors.js';
import { orgName } from '../schemas.js';
import type { Logger } from '../log.js';

export const permissions = ['upload', 'query', 'delete', 'read'] as const;
export type Permission = (typeof permissions)[number];

/**
 * How a route is guarded. `public`: no token (probes, metrics, docs). Otherwise a
 * token holding `permission` ('any': any valid token), and where the org is:
 * - `param`: the `:org` URL param, checked before the body is read;
 * - `body`: the `org` field of the JSON body, checked after parsing;
 * - `filter`: the answer lists several orgs' things; items of other orgs are dropped;
 * - `none`: the route touches no org's data (tool definitions, docs).
 */
export type Access =
  | { public: true }
  | { public?: false; permission: Permission | 'any'; org: 'param' | 'body' | 'filter' | 'none' };

const PUBLIC: Access = { public: true };

/**
 * The access rule of each route, by `METHOD url` as fastify registers it (HEAD
 * routes follow their GET). A route's own `config.access` takes precedence.
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
  'DELETE /v1/roots/:org/:repo/:sha': { permission: 'delete', org: 'param' },
  'GET /v1/roots': { permission: 'read', org: 'filter' },
  'POST /v1/code/lsp': { permission: 'query', org: 'body' },
  'POST /ask': { permission: 'query', org: 'body' },
  'GET /v1/tools': { permission: 'query', org: 'none' },
  // MCP carries the org inside each tool call's arguments, not at the top of the
  // body: until the MCP route checks them itself (config.access + assertOrg), only
  // a token for every org may use it (a limited one gets 403, never a bypass).
  'POST /mcp': { permission: 'query', org: 'body' },
  'GET /mcp': { permission: 'query', org: 'body' },
  'DELETE /mcp': { permission: 'query', org: 'body' },
};

// --- the tokens file -------------------------------------------------------

const tokenEntry = z
  .object({
    name: z.string().min(1).max(100).describe('A label for logs and metrics; never the token.'),
    sha256: z
      .string()
      .regex(/^[0-9a-f]{64}$/, 'expected the lowercase hex sha256 of the token (the token itself is never stored)')
      .describe('sha256 of the token, lowercase hex.'),
    orgs: z.union([z.literal('*'), z.array(orgName).min(1)]).describe('Orgs the token may touch, or "*" for all.'),
    permissions: z.array(z.enum(permissions)).min(1).describe('What the token may do.'),
  })
  .strict();

export const tokensFileSchema = z.object({ tokens: z.array(tokenEntry) }).strict();
export type TokensFile = z.infer<typeof tokensFileSchema>;

export interface Principal {
  name: string;
  orgs: '*' | ReadonlySet<string>;
  permissions: ReadonlySet<Permission>;
}

interface Entry {
  hash: Buffer;
  principal: Principal;
}

export class TokensFileError extends Error {
  override name = 'TokensFileError';
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Parse and check a tokens file's text. Throws TokensFileError naming the problem (never a token). */
export function parseTokensFile(text: string): Entry[] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new TokensFileError('not valid JSON');
  }
  const r = tokensFileSchema.safeParse(raw);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new TokensFileError(`${i.path.join('.') || '(top)'}: ${i.message}`);
  }
  const seenNames = new Set<string>();
  const seenHashes = new Set<string>();
  return r.data.tokens.map((t, i) => {
    if (seenNames.has(t.name)) throw new TokensFileError(`tokens.${i}.name: duplicate name "${t.name}"`);
    if (seenHashes.has(t.sha256)) throw new TokensFileError(`tokens.${i}.sha256: the same token is listed twice`);
    seenNames.add(t.name);
    seenHashes.add(t.sha256);
    return {
      hash: Buffer.from(t.sha256, 'hex'),
      principal: {
        name: t.name,
        orgs: t.orgs === '*' || t.orgs.includes('*') ? '*' : new Set(t.orgs),
        permissions: new Set(t.permissions),
      },
    };
  });
}

/** The live token set. `reload` swaps the entries in place, so the server keeps one reference. */
export class TokenSet {
  #entries: Entry[];
  readonly path: string;

  private constructor(path: string, entries: Entry[]) {
    this.path = path;
    this.#entries = entries;
  }

  /** Read at start: a bad file throws (main refuses to start). */
  static load(path: string): TokenSet {
    return new TokenSet(path, readEntries(path));
  }

  get size(): number {
    return this.#entries.length;
  }

  /** Re-read the file (SIGHUP). A bad file keeps the current tokens and logs why. */
  reload(log: Logger): boolean {
    try {
      this.#entries = readEntries(this.path);
      log.info({ tokens: this.#entries.length }, 'tokens reloaded');
      return true;
    } catch (err) {
      log.error({ reason: (err as Error).message, tokens: this.#entries.length }, 'tokens file rejected, keeping the previous tokens');
      return false;
    }
  }

  /**
   * The principal of a presented token, or undefined. The token is hashed first,
   * so every comparison is between two 32-byte digests, and every entry is
   * compared (no early exit) with timingSafeEqual: the time taken says nothing
   * about which entry, or how much of one, matched.
   */
  authenticate(token: string): Principal | undefined {
    const presented = createHash('sha256').update(token, 'utf8').digest();
    let found: Principal | undefined;
    for (const e of this.#entries) {
      if (timingSafeEqual(presented, e.hash) && found === undefined) found = e.principal;
    }
    return found;
  }
}

function readEntries(path: string): Entry[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new TokensFileError(`cannot read the tokens file (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return parseTokensFile(text);
}

export function mayTouchOrg(p: Principal, org: string): boolean {
  return p.orgs === '*' || p.orgs.has(org);
}

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
    const own = (route.config as { access?: Access } | undefined)?.access;
    const rules = methods.map((m) => own ?? accessTable[`${m === 'HEAD' ? 'GET' : m} ${route.url}`]);
    const missing = methods.filter((_m, i) => rules[i] === undefined);
    if (missing.length > 0) {
      throw new Error(
        `route ${missing.join(',')} ${route.url} declares no access rule: give it config.access or a row in src/http/auth.ts accessTable`,
      );
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
