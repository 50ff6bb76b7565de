// Which pinned toolchains this host has for FETCH. The jail binds /usr read-only
// and nothing else of the host's programs, so only a toolchain that lives under
// /usr (Debian packages pinned in images/pins.env, and npm/node from the image) can
// run in it: a per-user install (~/.cargo, ~/go, nvm, pyenv) is neither pinned nor
// visible, and its ecosystem is refused with a reason instead.
import { readlink, realpath } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Toolchains } from './types.js';

const candidates: Record<keyof Toolchains, string> = {
  go: '/usr/bin/go',
  npm: '/usr/bin/npm',
  node: '/usr/bin/node',
  composer: '/usr/bin/composer',
  php: '/usr/bin/php',
  python: '/usr/bin/python3',
  // Not run by path: `python3 -m pip` finds it in the system site dir (python3-pip).
  pip: '/usr/lib/python3/dist-packages/pip/__main__.py',
};

/** The toolchains present under /usr, by the path the jail runs them at. */
export async function detectToolchains(): Promise<Toolchains> {
  const out: Toolchains = {};
  for (const [name, path] of Object.entries(candidates) as [keyof Toolchains, string][]) {
    const real = await realpath(path).catch(() => undefined);
    // The link must end under /usr: a /usr/bin/go pointing into /root would not exist in the jail.
    if (!real?.startsWith('/usr/')) continue;
    // A chain through /etc/alternatives (Debian's php) dangles in the jail, which binds
    // no /etc/alternatives: run the file it ends at instead.
    out[name] = (await staysInUsr(path)) ? path : real;
  }
  return out;
}

/** Every hop of the link chain from `path` is under /usr. */
async function staysInUsr(path: string): Promise<boolean> {
  let p = path;
  for (let hops = 0; hops < 16; hops++) {
    if (!p.startsWith('/usr/')) return false;
    const target = await readlink(p).catch(() => undefined);
    if (target === undefined) return true;
    p = resolve(dirname(p), target);
  }
  return false;
}
