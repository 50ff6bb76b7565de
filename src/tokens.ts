// The tokens file and the live token set: who may touch which org with which
// permission. A leaf module (no http/ import), so main.ts loads it, the CLI's
// `lspd token` mints entries with it, and http/auth.ts enforces it.
//
// The file (LSPD_TOKENS) is JSON:
//   {"tokens": [{"name": "ci-acme", "sha256": "<64 hex>", "orgs": ["acme"],
//                "permissions": ["upload", "query", "read"]}]}
// Only the sha256 of a token is stored, so a leaked file (a backup, a Secret
// printed in a ticket) grants nothing. Tokens are minted high-entropy
// (`lspd token new`: 32 random bytes), which is why a plain unsalted hash is
// enough: there is no dictionary to attack. The file is read at start (a bad file
// refuses to start) and on SIGHUP (a bad file keeps the previous tokens and logs).
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { orgName } from './api/schemas.js';
import type { Logger } from './log.js';

export const permissions = ['upload', 'query', 'delete', 'read'] as const;
export type Permission = (typeof permissions)[number];

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
