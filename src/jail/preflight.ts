// What this host lacks to confine anything, in words an operator can act on.
// The canary is the proof; this only turns the usual failures into exact reasons
// before bwrap would print something vaguer. Nothing here can turn the jail off.
import { accessSync, constants, readFileSync } from 'node:fs';
import { FORWARDER_PATH, GATE_PATH, PROBE_PATH } from './policy.js';

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

/** Every missing prerequisite, one sentence each; empty when the host can try. */
export function preflight(opts: { bwrapPath: string }): string[] {
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
  ] as const) {
    if (!executable(p)) missing.push(`${what} is not built (run \`make -C jail\`)`);
  }
  try {
    accessSync(FORWARDER_PATH, constants.R_OK);
  } catch {
    missing.push('the egress forwarder is not built (run `make -C jail`)');
  }
  return missing;
}
