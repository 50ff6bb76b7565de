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
//
// Cost: linear in the base's entries plus the layer, and every symlink of the
// composed tree walked once (EntryChecker with deferred walks: each target a
// segment at a time, memoised links a step; `resolveSteps`). It runs on the event
// loop every org shares, so each loop over entries hands it back every few
// thousand items (event-loop.ts) and the walk every slice of steps: a 10 KB layer
// on a base of 20,000 long links held it 2.8 s in one go (issue 30).
import { errors } from '../errors.js';
import { nextTurn, turnCounter } from '../util/event-loop.js';
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
  /** Steps the composed tree's symlink walk took (its links' target segments, and memoised links met). */
  resolveSteps: number;
}

export async function compose(base: readonly TreeEntry[], layer: Layer, limits: EntryLimits): Promise<Composition> {
  const due = turnCounter();
  const byPath = new Map<string, TreeEntry>();
  for (const e of base) {
    byPath.set(e.path, e);
    if (due(e.path.length)) await nextTurn();
  }
  // What the whiteouts and opaque markers remove: a base path whiteout'd, or below a
  // whiteout'd or opaque directory. One climb of each base path's ancestors (linear
  // in the index's bytes, and in slices), not a sort of every base path.
  const removed = new Set<string>();
  if (layer.whiteouts.length > 0 || layer.opaques.length > 0) {
    const gone = new Set(layer.whiteouts);
    const emptied = new Set(layer.opaques);
    for (const path of byPath.keys()) {
      let hit = gone.has(path) || emptied.has('');
      for (let i = path.lastIndexOf('/'); !hit && i > 0; i = path.lastIndexOf('/', i - 1)) {
        const dir = path.slice(0, i);
        hit = gone.has(dir) || emptied.has(dir);
      }
      if (hit) removed.add(path);
      if (due()) await nextTurn();
    }
  }

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
  for (const e of await withParents(layer.entries)) {
    const b = live(e.path);
    if (b && b.kind === 'dir' && e.kind !== 'dir') throw errors.unsafeEntry(e.path, 'entry replaces a directory with a file');
    if (b && b.kind !== 'dir' && e.kind === 'dir') {
      throw errors.unsafeEntry(e.path, b.kind === 'symlink' ? 'path passes through a symlink' : 'entry replaces a file with a directory');
    }
    fromLayer.set(e.path, e);
  }

  const fromBase: TreeEntry[] = [];
  for (const b of byPath.values()) {
    if (!removed.has(b.path) && !fromLayer.has(b.path)) fromBase.push(b);
    if (due()) await nextTurn();
  }
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
    if (due()) await nextTurn();
  }
  if (entries.length > limits.maxTreeFiles) throw errors.tooLarge(`The tree has more than ${limits.maxTreeFiles} entries.`, 'tree_files');
  if (bytes > limits.maxTreeBytes) throw errors.tooLarge(`The tree is larger than the ${limits.maxTreeBytes}-byte limit.`, 'tree_bytes');
  // Every symlink walked through the final tree: only links change a walk (other
  // components are walked by name), so they are all the checker needs to see. Each
  // was resolved when it was uploaded, so only the final tree's walk runs (once per
  // link, deferLinkWalks), with the same step budget per header byte as an upload.
  const walker = new EntryChecker({ maxTreeBytes: Infinity, maxTreeFiles: Infinity, maxFileBytes: Infinity }, { deferLinkWalks: true });
  links.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const l of links) {
    walker.admit({ name: l.path, type: 'symlink', linkname: l.target, size: 0 });
    if (due(l.path.length + l.target.length)) await nextTurn();
  }
  await walker.verifySymlinksYielding();

  const changed = [...removed];
  for (const e of fromLayer.values()) if (e.kind !== 'dir' || !byPath.has(e.path)) changed.push(e.path);
  return { entries, fromBase, changed, files, bytes, languages: [...languages].sort(), resolveSteps: walker.resolveSteps };
}

function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

function whiteoutName(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? `.wh.${path}` : `${path.slice(0, i)}/.wh.${path.slice(i + 1)}`;
}
