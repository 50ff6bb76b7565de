// Start-up check: the daemon's private files must not lie under a host path that
// a jail binds. The data dir holds every org's trees and dependency caches, the
// tokens file says who may touch which org, and the config file says how the
// daemon runs: under /usr, the project's node_modules or jail/build, any jailed
// language server or fetcher (running one org's tree) could read them. The bound
// paths come from the phase policies themselves (policy.ts), so a bind added there
// is checked here without a second list. Paths are compared as real paths, so a
// symlink into a bound directory counts as being in it.
import { realpathSync } from 'node:fs';
import { basename, dirname, join, resolve, sep } from 'node:path';
import { boundHostPaths, hostLayout, phasePolicy, withSystemRoot } from './policy.js';

export interface PrivatePath {
  /** How the operator names it (LSPD_DATA, LSPD_TOKENS, LSPD_CONFIG). */
  name: string;
  path: string;
}

/**
 * Why one of `paths` is visible in a jail of a daemon over `dataDir`, or undefined when
 * none is. `systemRoots`: the system roots rows bind in place of the host's /usr (the
 * Debian 13 root), whose /usr and linker cache count as bound too.
 */
export function jailVisiblePath(dataDir: string, paths: readonly PrivatePath[], systemRoots: readonly string[] = []): string | undefined {
  const host = hostLayout(dataDir);
  const bound = [
    ...boundHostPaths(host),
    ...systemRoots.flatMap((root) =>
      (['serve', 'fetch'] as const).flatMap((phase) =>
        withSystemRoot(phasePolicy(phase, host), root)
          .roBinds.filter((b) => b.host.startsWith(root))
          .map((b) => ({ host: b.host, at: b.at, phase })),
      ),
    ),
  ];
  const binds = bound.map((b) => ({ ...b, real: realish(b.host) }));
  for (const p of paths) {
    const real = realish(p.path);
    const hit = binds.find((b) => real === b.real || real.startsWith(b.real.endsWith(sep) ? b.real : b.real + sep));
    if (hit) {
      const phases = [...new Set(binds.filter((b) => b.real === hit.real).map((b) => b.phase.toUpperCase()))];
      const who = phases.length > 1 ? `${phases.join(' and ')} jails bind` : `${phases[0]} jail binds`;
      return `${p.name} (${p.path}) lies under ${hit.host}, which the ${who} at ${hit.at}: every jailed process could read it; choose a path outside what the jails see`;
    }
  }
  return undefined;
}

/** The real path of `p`, or of its nearest existing ancestor joined with the rest (a data dir not yet created). */
function realish(p: string): string {
  const abs = resolve(p);
  try {
    return realpathSync(abs);
  } catch {
    const parent = dirname(abs);
    return parent === abs ? abs : join(realish(parent), basename(abs));
  }
}
