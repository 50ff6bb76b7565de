// What every server row shares: the boot-time probes that say whether a server is
// installed and which version, by reading files only (nothing is executed outside
// the jail). The environment a jailed server starts from (HOME, XDG dirs and TMPDIR
// inside its own tmpfs mounts) is the SERVE jail's own: layout.ts jailEnv('serve').
import { access, readFile } from 'node:fs/promises';
import { constants } from 'node:fs';
import type { ServerAvailability } from '../../health.js';

/** The image's node (Node servers run on it, never on a node a tree could supply). */
export const NODE = '/usr/bin/node';

/** Available when every file is readable; version from the first package.json (plus the others, joined). */
export async function probeFiles(files: string[], ...packageJsons: string[]): Promise<ServerAvailability> {
  for (const f of files) {
    try {
      await access(f, constants.R_OK);
    } catch {
      return { available: false, reason: `not installed (${f.split('/node_modules/').pop() ?? 'file'} missing)` };
    }
  }
  const versions: string[] = [];
  for (const pj of packageJsons) {
    try {
      const j = JSON.parse(await readFile(pj, 'utf8')) as { name?: string; version?: string };
      if (j.version) versions.push(versions.length === 0 ? j.version : `${j.name ?? '?'} ${j.version}`);
    } catch {
      /* version unknown is not unavailability */
    }
  }
  return versions.length ? { available: true, version: versions.join(', ') } : { available: true };
}

/** dpkg's database: where a Debian package's installed version is written down. */
export const DPKG_STATUS = '/var/lib/dpkg/status';
let dpkgStatus: Promise<string> | undefined;

/** The installed version of Debian package `pkg`, read from dpkg's status file (cached per process). */
export async function debianVersion(pkg: string, statusFile = DPKG_STATUS): Promise<string | undefined> {
  const text =
    statusFile === DPKG_STATUS ? await (dpkgStatus ??= readFile(statusFile, 'utf8').catch(() => '')) : await readFile(statusFile, 'utf8').catch(() => '');
  for (const para of text.split(/\n\n+/)) {
    if (!para.startsWith(`Package: ${pkg}\n`)) continue;
    if (!/^Status: install ok installed$/m.test(para)) continue;
    return /^Version: (.+)$/m.exec(para)?.[1];
  }
  return undefined;
}

/**
 * A native server installed at `path` (its row's argv[0]; under /usr, the only host
 * programs the SERVE jail binds). Version from the Debian package that installed
 * it. `absent` is the reason /readyz shows when it is not there.
 */
export async function probeBinary(opts: { path: string; debianPackage?: string; absent: string }): Promise<ServerAvailability> {
  try {
    await access(opts.path, constants.X_OK);
  } catch {
    return { available: false, reason: opts.absent };
  }
  const version = opts.debianPackage ? await debianVersion(opts.debianPackage) : undefined;
  return version ? { available: true, version } : { available: true };
}
