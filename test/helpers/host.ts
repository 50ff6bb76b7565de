// What a test needs of this host, decided in one place. Locally, a test whose
// prerequisite is missing (bubblewrap, root for the jail's uid pool, a language
// server, a toolchain) skips and says why. Under CI (CI=true, which CI sets) or
// with LSPD_REQUIRE_JAIL=1 the same lack fails the test file instead, naming what
// is missing: everything installable is installed there, and a green run that
// skipped the jail would prove nothing.
import { existsSync } from 'node:fs';
import { preflight } from '../../src/jail/preflight.js';

export class MissingPrerequisite extends Error {
  override name = 'MissingPrerequisite';
}

/** True when nothing may skip (CI, or an operator proving a host). */
export function prerequisitesRequired(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.CI === 'true' || env.CI === '1' || env.LSPD_REQUIRE_JAIL === '1';
}

/**
 * Pass a skip reason through: undefined stays undefined (run the test); a reason is
 * returned for `skip` locally and thrown as MissingPrerequisite where nothing may skip.
 */
export function skipOrFail(reason: string | undefined): string | undefined {
  if (reason !== undefined && prerequisitesRequired()) {
    throw new MissingPrerequisite(`this run requires every prerequisite (CI=true or LSPD_REQUIRE_JAIL=1), but ${reason}`);
  }
  return reason;
}

/** The bubblewrap the tests' jails use: the operator's LSPD_BWRAP_PATH, as the daemon reads it, else Debian's. */
export function testBwrapPath(): string {
  return process.env.LSPD_BWRAP_PATH || '/usr/bin/bwrap';
}

/** Why this host cannot run the real jail, or undefined; fails instead where nothing may skip. */
export function cannotJail(): string | undefined {
  const missing = preflight({ bwrapPath: testBwrapPath() });
  if (missing.length) return skipOrFail(`this host cannot run jails: ${missing.join('; ')}`);
  if (process.getuid?.() !== 0) return skipOrFail('the jail needs root (it runs each jail as a pool uid)');
  return undefined;
}

/** Why a binary a test needs is absent (undefined when every one exists); fails where nothing may skip. */
export function lacksBinaries(what: string, ...paths: string[]): string | undefined {
  const absent = paths.filter((p) => !existsSync(p));
  return skipOrFail(absent.length ? `${what} is not installed (${absent.join(', ')} missing)` : undefined);
}
