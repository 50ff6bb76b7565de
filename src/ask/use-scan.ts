// Which files of a root mention a name: where /ask looks for a use site of a name
// the workspace symbols do not declare (a dependency's export, a stdlib function).
// Reading is bounded (files, bytes, per-file size) and nothing read is kept: only
// the list of paths is, and since a root is immutable that list can be cached for
// as long as the root exists (AskService keeps an LRU of them).
import { languageOf } from '../languages.js';
import type { RootKey } from '../api/schemas.js';
import type { AskLimits } from './types.js';

// Directories whose files are dependencies or build output, not uses in the tree.
const NOT_SOURCE = new Set(['node_modules', '.git', 'vendor', 'dist', 'build', '__pycache__', '.venv', 'venv', 'site-packages', 'target']);

export interface ScanSource {
  listFiles(root: RootKey): Promise<readonly string[]>;
  /** Text of a file, not kept by the caller (undefined: unreadable, too large, not UTF-8). */
  readText(root: RootKey, path: string): Promise<string | undefined>;
}

export interface Mentions {
  /** Files that contain the leaf, those also naming the qualifier first. */
  files: string[];
  /**
   * Every source file was read (but those past maxScanFileBytes or not UTF-8: generated
   * bundles, which no answer should hinge on): a name absent from `files` is absent from
   * the tree's sources. False when the file or byte bound cut the scan.
   */
  complete: boolean;
}

/**
 * Source files a server could serve, outside dependency and build directories,
 * that contain `leaf`; those that also mention `qualifier` (`dep`, `greeter`)
 * first. At most limits.maxScanFiles files and about limits.maxScanBytes read.
 */
export async function filesMentioning(src: ScanSource, root: RootKey, leaf: string, qualifier: string | undefined, limits: AskLimits): Promise<Mentions> {
  const sources = (await src.listFiles(root)).filter((p) => languageOf(p) !== undefined && !p.split('/').some((s) => NOT_SOURCE.has(s)));
  const all = sources.slice(0, limits.maxScanFiles);
  const first: string[] = [];
  const rest: string[] = [];
  let read = 0;
  let next = 0;
  // A few reads in flight: the walk is I/O bound; the byte budget is checked before each read.
  const worker = async () => {
    while (next < all.length && read < limits.maxScanBytes) {
      const path = all[next++]!;
      const text = await src.readText(root, path);
      if (text === undefined) continue;
      read += text.length;
      if (!text.includes(leaf)) continue;
      (qualifier !== undefined && text.includes(qualifier) ? first : rest).push(path);
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  // Workers finish in any order; the answer must not depend on it.
  return { files: [...first.sort(), ...rest.sort()], complete: sources.length === all.length && next >= all.length };
}
