// Which pinned toolchains this host has for FETCH. The jail binds /usr read-only
// and nothing else of the host's programs, so only a toolchain that lives under
// /usr (Debian packages pinned in images/pins.env, and npm/node from the image) can
// run in it: a per-user install (~/.cargo, ~/go, nvm) is neither pinned nor
// visible, and its ecosystem is refused with a reason instead.
import { realpath } from 'node:fs/promises';
import type { Toolchains } from './types.js';

const candidates: Record<keyof Toolchains, string> = {
  go: '/usr/bin/go',
  npm: '/usr/bin/npm',
  node: '/usr/bin/node',
  composer: '/usr/bin/composer',
  php: '/usr/bin/php',
};

/** The toolchains present under /usr, by the path the jail runs them at. */
export async function detectToolchains(): Promise<Toolchains> {
  const out: Toolchains = {};
  for (const [name, path] of Object.entries(candidates) as [keyof Toolchains, string][]) {
    const real = await realpath(path).catch(() => undefined);
    // The link must stay under /usr: a /usr/bin/go pointing into /root would not exist in the jail.
    if (real?.startsWith('/usr/')) out[name] = path;
  }
  return out;
}
