// An incremental upload's new tree, decided from two pictures and nothing on disk:
// the base root's tree index and what the layer (the uploaded tar) wrote, removed
// (whiteouts) and emptied (opaque directories). OCI layer semantics: whiteouts and
// opaque markers apply to the base only, and the layer's own entries lie over what
// is left. https://github.com/opencontainers/image-spec/blob/main/layer.md
//
// The layer was admitted entry by entry as it streamed (EntryChecker in whiteout
// mode); here it is checked against the base: a layer entry may replace a base file
// or symlink by another, but never a directory by a file or a file by a directory
// unless a whiteout removed the base's first; a whiteout or opaque marker inside a
// base file or through a base symlink is refused. Then the composed tree is held to
// what a full upload of it would be: the same limits, and every symlink walked
// through the final tree by an EntryChecker (a layer can change where an unchanged
// base link leads). Each name was admitted when it was uploaded, with the layer or
// with the base, and a kept base entry never passes through a symlink (a base
// directory is only replaced once a whiteout removed all beneath it), so the rest
// of a full admission would find nothing new: it is not run again over 40,000
// unchanged entries.
import { errors } from '../errors.js';
import { languageOf, type Language } from '../languages.js';
import { EntryChecker, type EntryLimits } from './entry-check.js';
import { withParents, type SymlinkEntry, type TreeEntry } from './tree-index.js';

export interface Layer {
  /** What the layer wrote, in archive order. */
  entries: TreeEntry[];
  /** Base paths the layer's whiteouts remove (with everything under them). */
  whiteouts: string[];
  /** Directories whose base contents the layer's opaque markers remove ('' is the top). */
  opaques: string[];
}

export interface Composition {
  /** Every entry of the new tree. */
  entries: TreeEntry[];
  /** The base entries it keeps: directories to make, files and symlinks to link. */
  fromBase: TreeEntry[];
  /** Paths the layer added, replaced or removed (a superset of what differs from the base). */
  changed: string[];
  files: number;
  bytes: number;
  languages: Language[];
}

export function compose(base: readonly TreeEntry[], layer: Layer, limits: EntryLimits): Composition {
  const byPath = new Map<string, TreeEntry>();
  for (const e of base) byPath.set(e.path, e);
  let sorted: string[] | undefined; // only a layer that removes needs it
  const removed = new Set<string>();
  const removeUnder = (prefix: string) => {
    sorted ??= [...byPath.keys()].sort();
    for (let i = lowerBound(sorted, prefix); i < sorted.length && sorted[i]!.startsWith(prefix); i++) removed.add(sorted[i]!);
  };
  for (const w of layer.whiteouts) {
    if (byPath.has(w)) removed.add(w);
    removeUnder(`${w}/`);
  }
  for (const o of layer.opaques) removeUnder(o === '' ? '' : `${o}/`);

  // A whiteout or an opaque marker says its directory is one: in the base it must
  // not be a file or a symlink that stays (a whiteout "through" a link would mean
  // removing something the link points at).
  const live = (path: string) => (removed.has(path) ? undefined : byPath.get(path));
  const claimDir = (dir: string, entry: string) => {
    for (let d = dir; d !== ''; d = parentOf(d)) {
      const e = live(d);
      if (e && e.kind !== 'dir')
        throw errors.unsafeEntry(entry, e.kind === 'symlink' ? 'path passes through a symlink' : 'entry replaces a file with a directory');
    }
  };
  for (const w of layer.whiteouts) claimDir(parentOf(w), whiteoutName(w));
  for (const o of layer.opaques) claimDir(o, o === '' ? '.wh..wh..opq' : `${o}/.wh..wh..opq`);

  // The layer over what is left. Its implied directories are entries too, so a
  // directory it needs where the base keeps a file is caught here.
  const fromLayer = new Map<string, TreeEntry>();
  for (const e of withParents(layer.entries)) {
    const b = live(e.path);
    if (b && b.kind === 'dir' && e.kind !== 'dir') throw errors.unsafeEntry(e.path, 'entry replaces a directory with a file');
    if (b && b.kind !== 'dir' && e.kind === 'dir') {
      throw errors.unsafeEntry(e.path, b.kind === 'symlink' ? 'path passes through a symlink' : 'entry replaces a file with a directory');
    }
    fromLayer.set(e.path, e);
  }

  const fromBase: TreeEntry[] = [];
  for (const b of byPath.values()) if (!removed.has(b.path) && !fromLayer.has(b.path)) fromBase.push(b);
  const entries = [...fromBase, ...fromLayer.values()];

  // The limits, as EntryChecker counts them (every entry, directories too; file bytes).
  let files = 0;
  let bytes = 0;
  const languages = new Set<Language>();
  const links: SymlinkEntry[] = [];
  for (const e of entries) {
    if (e.kind === 'dir') continue;
    files++;
    if (e.kind === 'symlink') links.push(e);
    else {
      bytes += e.size;
      const row = languageOf(e.path);
      if (row) languages.add(row.language);
    }
  }
  if (entries.length > limits.maxTreeFiles) throw errors.tooLarge(`The tree has more than ${limits.maxTreeFiles} entries.`, 'tree_files');
  if (bytes > limits.maxTreeBytes) throw errors.tooLarge(`The tree is larger than the ${limits.maxTreeBytes}-byte limit.`, 'tree_bytes');
  // Every symlink walked through the final tree: only links change a walk (other
  // components are walked by name), so they are all the checker needs to see.
  const walker = new EntryChecker({ maxTreeBytes: Infinity, maxTreeFiles: Infinity, maxFileBytes: Infinity });
  links.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const l of links) walker.admit({ name: l.path, type: 'symlink', linkname: l.target, size: 0 });
  walker.verifySymlinks();

  const changed = [...removed];
  for (const e of fromLayer.values()) if (e.kind !== 'dir' || !byPath.has(e.path)) changed.push(e.path);
  return { entries, fromBase, changed, files, bytes, languages: [...languages].sort() };
}

function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

function whiteoutName(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? `.wh.${path}` : `${path.slice(0, i)}/.wh.${path.slice(i + 1)}`;
}

/** First index whose string is >= `s` in a sorted array. */
function lowerBound(sorted: readonly string[], s: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid]! < s) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
