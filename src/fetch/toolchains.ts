// Which pinned toolchains this host has for FETCH. The jail binds /usr read-only
// and nothing else of the host's programs, so only a toolchain that lives under
// /usr (Debian packages pinned in images/pins.env, and npm/node from the image) can
// run in it: a per-user install (~/.cargo, ~/go, nvm, pyenv) is neither pinned nor
// visible, and its ecosystem is refused with a reason instead. Cargo is the one
// exception to /usr: it is Debian 13's, in the Debian 13 root whose /usr its jail
// binds instead (images/debian13-root.sh), found there.
import { constants } from 'node:fs';
import { access, lstat, readlink, realpath } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { DEFAULT_DEBIAN13_ROOT } from '../config.js';
import type { Toolchains } from './types.js';

const candidates: Record<Exclude<keyof Toolchains, 'cargo' | 'cargoRoot'>, string> = {
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
export async function detectToolchains(debian13Root: string = DEFAULT_DEBIAN13_ROOT): Promise<Toolchains> {
  const out: Toolchains = {};
  // cargo and rustc are regular files of the root's /usr/bin (Debian installs no links for them).
  const inRoot = async (p: string) =>
    (await lstat(join(debian13Root, p)).catch(() => undefined))?.isFile() &&
    (await access(join(debian13Root, p), constants.X_OK).then(
      () => true,
      () => false,
    ));
  if ((await inRoot('usr/bin/cargo')) && (await inRoot('usr/bin/rustc'))) Object.assign(out, { cargo: '/usr/bin/cargo', cargoRoot: debian13Root });
  for (const [name, path] of Object.entries(candidates) as [keyof typeof candidates, string][]) {
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
