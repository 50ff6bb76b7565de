// Read access to a stored root's files for /ask: the text of a file (to put a
// probe position under a name) and the list of source files (to look for a use of
// a name defined outside the tree). The daemon reads these itself, outside the
// jail, so every read is confined: the resolved real path must stay inside the
// root's tree, only regular files are read, sizes are bounded before reading,
// and text that is not UTF-8 is skipped rather than guessed at.
import { lstat, open, readdir, realpath } from 'node:fs/promises';
import { constants } from 'node:fs';
import { join, sep } from 'node:path';
import type { RootKey } from '../api/schemas.js';
import type { TreeFiles } from './ask-service.js';

// Never walked: dependencies (they are answered as `external`, not as uses in the
// tree), VCS metadata and build output. Bounds the walk on big monorepos too.
const SKIP_DIRS = new Set(['node_modules', '.git', '.hg', '.svn', 'vendor', 'dist', 'build', 'target', '__pycache__', '.venv', 'venv', 'site-packages']);

export interface TreeFilesOptions {
  /** Host directory of a stored root's tree (RootStore.treeDir). */
  treeDir(key: RootKey): string;
  /** Most paths listed for one root. */
  maxListed?: number;
}

export function treeFiles(o: TreeFilesOptions): TreeFiles {
  const maxListed = o.maxListed ?? 50_000;
  const utf8 = new TextDecoder('utf-8', { fatal: true });

  return {
    async readText(key, path, maxBytes) {
      const top = await realpath(o.treeDir(key)).catch(() => undefined);
      if (top === undefined) return undefined;
      const real = await realpath(join(top, path)).catch(() => undefined);
      // A link inside the tree may point anywhere; only a target inside the tree is read.
      if (real === undefined || !real.startsWith(top + sep)) return undefined;
      let fh;
      try {
        // O_NOFOLLOW: the path was just resolved; a swap to a link in between is refused, not followed.
        fh = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW);
        const st = await fh.stat();
        if (!st.isFile() || st.size > maxBytes) return undefined;
        const buf = Buffer.alloc(st.size);
        const { bytesRead } = await fh.read(buf, 0, st.size, 0);
        return utf8.decode(buf.subarray(0, bytesRead));
      } catch {
        return undefined;
      } finally {
        await fh?.close();
      }
    },

    async listFiles(key) {
      const top = o.treeDir(key);
      if (!(await lstat(top).catch(() => undefined))?.isDirectory()) return [];
      const out: string[] = [];
      // Breadth-first, so a bound cuts deep directories first, not whole top-level ones.
      let level = [''];
      while (level.length > 0 && out.length < maxListed) {
        const next: string[] = [];
        for (const rel of level) {
          const entries = await readdir(join(top, rel), { withFileTypes: true }).catch(() => []);
          entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
          for (const e of entries) {
            const p = rel === '' ? e.name : `${rel}/${e.name}`;
            // Symbolic links are not followed: a file reachable only through one is not a use site worth a walk.
            if (e.isDirectory() && !SKIP_DIRS.has(e.name)) next.push(p);
            else if (e.isFile() && out.length < maxListed) out.push(p);
          }
        }
        level = next;
      }
      return out;
    },
  };
}
