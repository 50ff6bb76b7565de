// Whether a package a server cannot work without is where the server would look for
// it: the workspace's node_modules or an ancestor's, in the tree or fetched (a FETCH
// mount bound over `<ws>/node_modules`). Node's resolution, on the host's side of the
// binds; nothing is run.
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { Bind } from '../../jail/types.js';
import { TREE_AT } from '../../jail/layout.js';

const readable = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

/** `workspace` is root-relative ('' the top); `depBinds` the session's dependency mounts (at paths under TREE_AT). */
export async function packageVisible(name: string, o: { treeHostDir: string; workspace: string; depBinds: readonly Bind[] }): Promise<boolean> {
  const parts = o.workspace === '' ? [] : o.workspace.split('/');
  for (let n = parts.length; n >= 0; n--) {
    const rel = parts.slice(0, n).join('/');
    const at = rel === '' ? `${TREE_AT}/node_modules` : `${TREE_AT}/${rel}/node_modules`;
    // A fetched node_modules hides the tree's own at the same place, as the jail's bind does.
    const mount = o.depBinds.find((b) => b.at === at);
    const dir = mount ? mount.host : join(o.treeHostDir, rel, 'node_modules');
    if (await readable(join(dir, name, 'package.json'))) return true;
  }
  return false;
}
