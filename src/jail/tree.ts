// The tree and the caller's binds, checked before a jail is built: the tree is
// opened once (O_DIRECTORY|O_NOFOLLOW), checked (owner, admitted inode) and bound by
// that descriptor; mount points a bind needs inside the read-only tree are created
// through it; bind sources reached through a link are refused.
import assert from 'node:assert/strict';
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, realpathSync, writeFileSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { errors } from '../errors.js';
import { isJailPath } from './bwrap-argv.js';
import type { Bind, JailSpawnOptions } from './types.js';

/**
 * A bind's host path must be the path itself, with no symlink anywhere in it: bwrap
 * resolves it as the pool uid and would follow a link an earlier FETCH jail left in
 * a dependency dir (deps/x → /etc) to mount a host directory in the jail.
 */
export function checkBindHost(host: string): void {
  let real: string;
  try {
    real = realpathSync(host);
  } catch {
    throw errors.serverUnavailable('A directory to bind into the jail is missing.', 5);
  }
  if (real !== resolve(host)) throw errors.serverUnavailable('A directory to bind into the jail is reached through a link; refused.', 60);
}

/** O_DIRECTORY|O_NOFOLLOW, owned by the daemon, and the expected inode if the caller gave one. */
export function openTree(tree: NonNullable<JailSpawnOptions['tree']>): number {
  assert.ok(isJailPath(tree.at), 'tree.at');
  let fd: number;
  try {
    fd = openSync(tree.hostDir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  } catch {
    throw errors.serverUnavailable('The tree is not available.', 1);
  }
  const st = fstatSync(fd, { bigint: true });
  const why = !st.isDirectory()
    ? 'not a directory'
    : st.uid !== BigInt(process.getuid!())
      ? 'not owned by lspd'
      : tree.expect && (st.dev !== BigInt(tree.expect.dev) || st.ino !== BigInt(tree.expect.ino))
        ? 'not the admitted directory'
        : undefined;
  if (why) {
    closeSync(fd);
    throw errors.serverUnavailable(`The tree was refused (${why}).`, 1);
  }
  return fd;
}

/**
 * bwrap cannot create a mount point inside a read-only bind, so a bind that lands
 * inside the tree (a dependency dir over <ws>/node_modules) needs its mount point to
 * exist first. Created through the checked fd; a symlink or file on the way is refused
 * (a tree could point one anywhere in the jail).
 */
export function preCreateMountPoints(treeFd: number, treeAt: string, binds: readonly Bind[]): void {
  for (const b of binds) {
    if (!b.at.startsWith(treeAt + '/')) continue;
    const parts = b.at.slice(treeAt.length + 1).split('/');
    const hostIsDir = lstatSync(b.host).isDirectory();
    let rel = '';
    parts.forEach((part, i) => {
      rel += '/' + part;
      const p = `/proc/self/fd/${treeFd}${rel}`;
      const last = i === parts.length - 1;
      let st;
      try {
        st = lstatSync(p);
      } catch {
        if (last && !hostIsDir) writeFileSync(p, '', { flag: 'wx', mode: 0o644 });
        else mkdirSync(p, { mode: 0o755 });
        return;
      }
      if (st.isSymbolicLink() || (!st.isDirectory() && !(last && !hostIsDir))) {
        throw errors.serverUnavailable('The tree holds a link or file where a dependency directory is mounted.', 60);
      }
    });
  }
}

/** A read-only bind's source, opened without following a final link, for --ro-bind-fd. */
export function openBindSource(host: string): number {
  const st = lstatSync(host);
  // Only directories and regular files: a FIFO a FETCH jail left in a dependency dir
  // would block open(2) (O_NONBLOCK is there for the race where it appears anyway).
  if (!st.isDirectory() && !st.isFile()) throw errors.serverUnavailable('A bind source is neither a directory nor a file; refused.', 60);
  const fd = (() => {
    try {
      return openSync(host, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | (st.isDirectory() ? constants.O_DIRECTORY : 0));
    } catch {
      throw errors.serverUnavailable('A directory to bind into the jail cannot be opened.', 5);
    }
  })();
  const now = fstatSync(fd);
  if (now.ino !== st.ino || now.dev !== st.dev) {
    closeSync(fd);
    throw errors.serverUnavailable('A directory to bind into the jail changed while it was opened.', 1);
  }
  return fd;
}

/**
 * A system root's /usr (JailSpawnOptions.systemRoot) is bound by path, like the
 * host's: absolute, reached through no link, a directory root owns and only root
 * writes, so no jail uid (nor a tree) could have changed what the next jail runs.
 */
export function checkSystemRoot(root: string): void {
  const usr = join(root, 'usr');
  let st;
  try {
    checkBindHost(usr);
    st = lstatSync(usr);
  } catch {
    throw errors.serverUnavailable('The system root for this server is missing (images/setup.sh makes it).', 60);
  }
  if (!isAbsolute(root) || !st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0) {
    throw errors.serverUnavailable('The system root for this server is not a root-owned directory only root writes; refused.', 60);
  }
}
