// What this host lacks to confine anything, in words an operator can act on.
// The canary is the proof; this only turns the usual failures into exact reasons
// before bwrap would print something vaguer. Nothing here can turn the jail off.
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { FORWARDER_PATH, GATE_PATH, JAIL_BUILD_DIR, PROBE_PATH, PROJECT_DIR } from './policy.js';

function readSysctl(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8').trim();
  } catch {
    return undefined;
  }
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * bwrap resolves the paths it binds as the jail's pool uid, which owns nothing on
 * the host: every directory on the way must be searchable by others (o+x). Returns
 * the first above `path` that is not. (The data dir itself is lspd's: jail.ts makes it 0711.)
 */
export function closedAncestor(path: string): string | undefined {
  let p = dirname(path);
  for (;;) {
    try {
      if ((statSync(p).mode & 0o001) === 0) return p;
    } catch {
      /* not there yet (lspd will create it, searchable): look further up */
    }
    if (p === '/') return undefined;
    p = dirname(p);
  }
}

/** Every missing prerequisite, one sentence each; empty when the host can try. */
export function preflight(opts: { bwrapPath: string; dataDir?: string }): string[] {
  if (process.platform !== 'linux') {
    return [`lspd confines language servers with Linux namespaces and seccomp; this host is ${process.platform}, so nothing can be served`];
  }
  const missing: string[] = [];
  if (process.getuid?.() !== 0) {
    missing.push('lspd must run as root to run each jail as its own host uid (LSPD_JAIL_UID_BASE); it runs as uid ' + process.getuid?.());
  }
  if (!executable(opts.bwrapPath)) missing.push('bubblewrap is not installed (LSPD_BWRAP_PATH; Debian package bubblewrap)');
  if (readSysctl('/proc/sys/user/max_user_namespaces') === '0') missing.push('user namespaces are disabled (sysctl user.max_user_namespaces=0)');
  if (readSysctl('/proc/sys/kernel/unprivileged_userns_clone') === '0') {
    missing.push('unprivileged user namespaces are disabled (sysctl kernel.unprivileged_userns_clone=0)');
  }
  if (readSysctl('/proc/sys/kernel/apparmor_restrict_unprivileged_userns') === '1') {
    missing.push('AppArmor restricts unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=1)');
  }
  for (const [what, p] of [
    ['the jail gate', GATE_PATH],
    ['the jail probe', PROBE_PATH],
    ['the egress forwarder', FORWARDER_PATH],
  ] as const) {
    if (!executable(p)) missing.push(`${what} is not built (run \`make -C jail\`)`);
  }
  for (const p of [JAIL_BUILD_DIR, join(PROJECT_DIR, 'node_modules'), ...(opts.dataDir ? [opts.dataDir] : [])]) {
    const closed = closedAncestor(p);
    if (closed) {
      missing.push(`the jail uids cannot reach lspd's files: ${closed} is not searchable by others (chmod o+x, or install lspd and LSPD_DATA elsewhere)`);
      break;
    }
  }
  return missing;
}
