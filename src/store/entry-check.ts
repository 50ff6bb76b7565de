// The pure half of tar ingest: decides, from headers alone, whether each entry of
// an uploaded tar may be written, and where. It owns the in-memory picture of the
// tree being built (every path, its kind, every symlink target) and the limits.
// Nothing here touches the disk, so every refusal can be unit-tested by feeding
// headers, and a refusal always happens before a byte of the entry is written.
import { errors } from '../errors.js';
import { languageOf, type Language } from '../languages.js';
import { LinkWalker, type WalkRefusal } from './link-walk.js';
import { TreeCharge, fileDiskBytes, symlinkDiskBytes } from './disk-charge.js';
import { nextTurn } from '../util/event-loop.js';

/** The header fields the checks need (tar-stream's header, after PAX/GNU long names are applied). */
export interface EntryHeader {
  name: string;
  type?: string | null;
  linkname?: string | null;
  mode?: number;
  /** tar-stream gives null for a size field it cannot decode (a bad base-256 prefix). */
  size?: number | null;
}

export interface EntryLimits {
  maxTreeBytes: number;
  maxTreeFiles: number;
  maxFileBytes: number;
  /**
   * The disk this upload's org has room for (its quota less what it cannot evict),
   * when the store gives one: past it the upload is refused 507 with `why`, since
   * what is short is disk, not a limit on trees.
   */
  room?: { bytes: number; why: string };
  /** The filesystem block the disk charge counts in (disk-charge.ts; 4096 when absent). */
  blockBytes?: number;
  /** Most names one file may have (itself and its tar hard links); unbounded when absent. */
  maxHardLinksPerFile?: number;
}

/** What to do with one admitted entry; paths are normalized, root-relative, `/`-separated. */
export type Admission =
  | { kind: 'skip' }
  | { kind: 'dir'; path: string }
  | { kind: 'file'; path: string; size: number; executable: boolean }
  | { kind: 'symlink'; path: string; target: string }
  | { kind: 'hardlink'; path: string; target: string }
  /** A layer's deletion (OCI whiteout `dir/.wh.name`): `path` is what it removes from the base. */
  | { kind: 'whiteout'; path: string }
  /** A layer's opaque marker (`dir/.wh..wh..opq`): the base's contents of `dir` are removed. */
  | { kind: 'opaque'; dir: string };

export interface CheckerOptions {
  /**
   * The archive is a layer over a base (an incremental upload): names whose last
   * segment starts with `.wh.` are whiteouts in the OCI image-layer convention
   * (https://github.com/opencontainers/image-spec/blob/main/layer.md#whiteouts),
   * not files. A full upload stores such names as ordinary files.
   */
  whiteouts?: boolean;
  /**
   * Resolve symlinks only in verifySymlinks, over the final tree, not also as each
   * arrives: for a tree whose links were each resolved when they were uploaded (a
   * composed root, compose.ts), the walk on arrival is work done twice, and
   * adding links in another order than their upload's can end memos a walk on
   * arrival made, walking the same targets again.
   */
  deferLinkWalks?: boolean;
}

const WHITEOUT = '.wh.';
const OPAQUE = '.wh..wh..opq';

const enum Kind {
  ImplicitDir,
  Dir,
  File,
  Symlink,
}

// A name reaches a host path as <dataDir>/roots/<org>/<repo>/<sha>/tree/<name>, and
// syscalls take at most PATH_MAX (4096) bytes: leave room for that prefix.
const MAX_PATH_BYTES = 3072;
const MAX_SEGMENT_BYTES = 255;
// Symlink resolution may take this many steps (segments walked, links met) per
// byte of header the upload has sent so far, plus a start: a real tree's links
// cost a few steps each against at least 512 header bytes, so only a tar built
// to multiply work meets it. Linear in what the tar sends, whatever it sends.
export const RESOLVE_STEPS_PER_HEADER_BYTE = 2;
export const RESOLVE_STEPS_BASE = 1 << 20;
/** About 0.5-3 ms of walking between turns of the event loop in the final check (2-10 ms at 1 << 16 held another org's p99, issue 30). */
const VERIFY_YIELD_STEPS = 1 << 14;
/** The bytes a tar header takes at least (one block), beside the names it carries. */
const HEADER_BLOCK_BYTES = 512;
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Normalize a tar name to a root-relative path: drop `./` and empty segments and a
 * trailing `/`; refuse absolute names, `..` segments, control characters and
 * over-long names. '' is the tree's top itself. Throws unsafe_entry naming `name`.
 */
export function normalizeName(name: string, entry = name): string {
  if (CONTROL.test(name)) throw errors.unsafeEntry(entry, 'control character in name');
  if (name.startsWith('/')) throw errors.unsafeEntry(entry, 'absolute path');
  const segs: string[] = [];
  for (const seg of name.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') throw errors.unsafeEntry(entry, '".." in path');
    if (Buffer.byteLength(seg) > MAX_SEGMENT_BYTES) throw errors.unsafeEntry(entry, 'name too long');
    segs.push(seg);
  }
  const path = segs.join('/');
  if (Buffer.byteLength(path) > MAX_PATH_BYTES) throw errors.unsafeEntry(entry, 'name too long');
  return path;
}

function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}

/**
 * Admits the entries of one upload, in archive order. One instance per upload.
 *
 * Symlink rule: an entry whose path passes through an earlier symlink is refused,
 * so nothing is ever written through a link. A symlink's target is checked
 * lexically when it arrives (quick refusal), and again in `verifySymlinks()` once
 * the whole tree is known, by walking it the way the kernel would (following
 * every link in the final tree, `..` applied to the physical path). The second walk
 * is what catches links whose meaning changes with later entries: `b -> q/..`
 * stays inside until `q -> .` arrives, after which `b` is the root's parent.
 */
export class EntryChecker {
  private readonly kinds = new Map<string, Kind>();
  /** Symlink paths in archive order. */
  private readonly links: string[] = [];
  /** Header bytes seen so far (a block per entry, plus its name and link name): the resolution budget grows with them. */
  headerBytes = 0;
  private readonly walker = new LinkWalker(() => this.resolveBudget);
  /** Whiteout entries seen (their own paths), to refuse duplicates. */
  private readonly whiteoutNames = new Set<string>();
  /** Languages of the regular files admitted so far (src/languages.ts table). */
  readonly languages = new Set<Language>();
  /** Non-directory entries (files, hard links, symlinks). */
  files = 0;
  /** Bytes of regular-file content stored (a hard link adds none: it shares its target's data). */
  bytes = 0;
  /** What the tree takes on disk so far, metadata included: checked against the org's room entry by entry. */
  readonly disk: TreeCharge;
  /** Names each hard-linked file has so far, by its first name; and each hard link's first name. */
  private readonly linkNames = new Map<string, number>();
  private readonly firstName = new Map<string, string>();

  constructor(
    private readonly limits: EntryLimits,
    private readonly opts: CheckerOptions = {},
  ) {
    this.disk = new TreeCharge(limits.blockBytes ?? 4096);
  }

  /** Steps spent resolving symlink targets so far (the work the budget bounds). */
  get resolveSteps(): number {
    return this.walker.steps;
  }

  /** Steps resolution may have taken by now. */
  get resolveBudget(): number {
    return RESOLVE_STEPS_PER_HEADER_BYTE * this.headerBytes + RESOLVE_STEPS_BASE;
  }

  admit(h: EntryHeader): Admission {
    const entry = h.name;
    this.headerBytes += HEADER_BLOCK_BYTES + entry.length + (h.linkname?.length ?? 0);
    // tar-stream reports an unknown type flag as null: that must not read as 'file'.
    const type = h.type === undefined ? 'file' : h.type;
    // An undecodable size is null, and `null >= 0` passes tar-stream's own check: the
    // entry stream it hands out then never ends and the upload would hang. Refuse it.
    if (h.size === null || (h.size !== undefined && !(Number.isSafeInteger(h.size) && h.size >= 0))) {
      throw errors.badArchive(`Entry ${JSON.stringify(entry)} has an invalid size field.`);
    }
    const size = h.size ?? 0;
    switch (type) {
      case 'character-device':
      case 'block-device':
        throw errors.unsafeEntry(entry, 'device entries are not allowed');
      case 'fifo':
        throw errors.unsafeEntry(entry, 'fifo entries are not allowed');
      case 'file':
      case 'contiguous-file':
      case 'directory':
      case 'symlink':
      case 'link':
        break;
      default:
        // tar has no standard socket type; sockets, sparse files, volume labels and
        // every other flag land here.
        throw errors.unsafeEntry(entry, 'unsupported entry type');
    }
    const path = normalizeName(entry);
    if (type !== 'directory' && entry.endsWith('/')) throw errors.unsafeEntry(entry, 'a name ending in "/" must be a directory');
    // tar-stream reads a directory's data as the next header, and the entry stream it
    // hands out for a directory with a size never ends: refuse before anything waits on
    // it, the top directory ("." / "./") included, or the upload hangs for good.
    if (type === 'directory' && size !== 0) throw errors.badArchive(`Directory entry ${JSON.stringify(entry)} carries data.`);
    if (path === '') {
      if (type === 'directory') return { kind: 'skip' };
      throw errors.unsafeEntry(entry, 'entry replaces the top directory');
    }
    if (this.opts.whiteouts && baseName(path).startsWith(WHITEOUT)) return this.admitWhiteout(entry, path, type, size);

    if (type === 'directory') {
      const prev = this.kinds.get(path);
      if (prev === Kind.Dir) throw errors.unsafeEntry(entry, 'duplicate entry');
      if (prev === Kind.File || prev === Kind.Symlink) throw errors.unsafeEntry(entry, 'entry replaces a file with a directory');
      this.ensureParents(path, entry);
      if (prev === undefined) {
        this.count(entry);
        this.charge(path, 'dir', 0);
      }
      this.kinds.set(path, Kind.Dir);
      return { kind: 'dir', path };
    }

    const prev = this.kinds.get(path);
    if (prev === Kind.Dir || prev === Kind.ImplicitDir) throw errors.unsafeEntry(entry, 'entry replaces a directory with a file');
    if (prev !== undefined) throw errors.unsafeEntry(entry, 'duplicate entry');
    this.ensureParents(path, entry);

    if (type === 'symlink') {
      const target = h.linkname ?? '';
      this.checkLinkTarget(entry, path, target);
      this.count(entry);
      this.charge(path, 'symlink', symlinkDiskBytes(target, this.disk.blockBytes), target);
      this.kinds.set(path, Kind.Symlink);
      this.links.push(path);
      this.walker.add(path, target);
      this.files++;
      return { kind: 'symlink', path, target };
    }

    if (type === 'link') {
      // A hard link may only name a regular file stored earlier in this upload; any
      // other target (outside, a symlink, a directory, a later entry) is refused.
      const raw = h.linkname ?? '';
      if (raw === '') throw errors.unsafeEntry(entry, 'hard link without a target');
      const target = normalizeName(raw, entry);
      if (this.kinds.get(target) !== Kind.File) throw errors.unsafeEntry(entry, 'hard link target is not a file stored earlier in this archive');
      this.countName(entry, path, target);
      this.count(entry);
      this.charge(path, 'file', 0);
      this.kinds.set(path, Kind.File);
      this.files++;
      this.noteLanguage(path);
      return { kind: 'hardlink', path, target };
    }

    if (size > this.limits.maxFileBytes) {
      throw errors.tooLarge(`Entry ${JSON.stringify(entry)} is larger than the ${this.limits.maxFileBytes}-byte limit for one file.`, 'file_bytes');
    }
    if (this.bytes + size > this.limits.maxTreeBytes) {
      throw errors.tooLarge(`The tree is larger than the ${this.limits.maxTreeBytes}-byte limit.`, 'tree_bytes');
    }
    this.count(entry);
    this.charge(path, 'file', fileDiskBytes(size, this.disk.blockBytes));
    this.kinds.set(path, Kind.File);
    this.files++;
    this.bytes += size;
    this.noteLanguage(path);
    return { kind: 'file', path, size, executable: ((h.mode ?? 0) & 0o111) !== 0 };
  }

  /**
   * A whiteout removes a base path; it writes nothing. It must be an empty regular
   * file naming one entry (never `.`, `..` or nothing); its directory must be a
   * directory of the layer too (a whiteout inside a file or through a symlink is
   * refused like any entry there). Whether the base agrees is checked when the
   * layer is composed with it (compose.ts).
   */
  private admitWhiteout(entry: string, path: string, type: string, size: number): Admission {
    if ((type !== 'file' && type !== 'contiguous-file') || size !== 0) throw errors.unsafeEntry(entry, 'a whiteout must be an empty regular file');
    const seg = baseName(path);
    const dir = parentOf(path);
    if (this.whiteoutNames.has(path)) throw errors.unsafeEntry(entry, 'duplicate entry');
    let admission: Admission;
    if (seg === OPAQUE) admission = { kind: 'opaque', dir };
    else {
      const name = seg.slice(WHITEOUT.length);
      if (name === '' || name === '.' || name === '..') throw errors.unsafeEntry(entry, 'a whiteout must name an entry (not "", "." or "..")');
      if (name.startsWith(WHITEOUT)) throw errors.unsafeEntry(entry, 'unsupported whiteout (".wh..wh." names other than the opaque marker are reserved)');
      admission = { kind: 'whiteout', path: dir === '' ? name : `${dir}/${name}` };
    }
    this.ensureParents(path, entry);
    this.count(entry);
    this.whiteoutNames.add(path);
    return admission;
  }

  /**
   * Walk every symlink's target through the final tree as the kernel would; refuse
   * (naming the first link in archive order) any that leads out of the root.
   */
  verifySymlinks(): void {
    for (const _ of this.verifying(Infinity));
  }

  /** verifySymlinks, handing the event loop back every `yieldSteps` steps (a tar can hold many links). */
  async verifySymlinksYielding(yieldSteps = VERIFY_YIELD_STEPS): Promise<void> {
    for (const _ of this.verifying(yieldSteps)) await nextTurn();
  }

  private *verifying(yieldSteps: number): Generator<void> {
    let mark = this.walker.steps;
    for (const path of this.links) {
      const why = this.walker.check(path);
      if (why) throw errors.unsafeEntry(path, reasonOf(why));
      if (this.walker.steps - mark >= yieldSteps) {
        yield;
        mark = this.walker.steps;
      }
    }
  }

  private noteLanguage(path: string): void {
    const row = languageOf(path);
    if (row) this.languages.add(row.language);
  }

  private count(entry: string): void {
    if (this.kinds.size + this.whiteoutNames.size + 1 > this.limits.maxTreeFiles) {
      throw errors.tooLarge(`The tree has more than ${this.limits.maxTreeFiles} entries (at ${JSON.stringify(entry)}).`, 'tree_files');
    }
  }

  /**
   * Every ancestor must be a directory (explicit or implied). Walks upward and
   * stops at the first known directory: a known directory's ancestors are known
   * directories, so each entry costs O(new ancestors).
   */
  private ensureParents(path: string, entry: string): void {
    const missing: string[] = [];
    for (let dir = parentOf(path); dir !== ''; dir = parentOf(dir)) {
      const k = this.kinds.get(dir);
      if (k === Kind.Dir || k === Kind.ImplicitDir) break;
      if (k === Kind.Symlink) throw errors.unsafeEntry(entry, 'path passes through a symlink');
      if (k === Kind.File) throw errors.unsafeEntry(entry, 'entry replaces a file with a directory');
      missing.push(dir);
    }
    for (const dir of missing) {
      this.count(entry);
      this.charge(dir, 'dir', 0);
      this.kinds.set(dir, Kind.ImplicitDir);
    }
  }

  /**
   * Count an entry's disk (disk-charge.ts) before it is written; past the org's
   * room the upload is refused 507, whatever the entry holds: a directory's block
   * and every name's slot are disk as much as a file's bytes.
   */
  private charge(path: string, kind: 'dir' | 'file' | 'symlink', dataBytes: number, target?: string): void {
    this.disk.add(path, kind, target);
    this.disk.dataBytes += dataBytes;
    // Counted before the check: past it the whole upload fails, so what the count says after does not matter.
    const room = this.limits.room;
    if (room && this.disk.bytes > room.bytes) throw errors.insufficientStorage(room.why, { limit: 'org_disk_quota' });
  }

  /**
   * A hard link is one more name of its file's inode (counted by the file's first
   * name, so a link to a link counts against the same file). Refused past the
   * bound rather than stored as a copy per so many names: a real tree never needs
   * it, and each root composed on this one would add as many links again, toward
   * ext4's 65,000 per inode where composing must copy (config.ts).
   */
  private countName(entry: string, path: string, target: string): void {
    const first = this.firstName.get(target) ?? target;
    const names = (this.linkNames.get(first) ?? 1) + 1;
    const max = this.limits.maxHardLinksPerFile ?? Infinity;
    if (names > max) {
      throw errors.unsafeEntry(
        entry,
        `file ${JSON.stringify(first)} would have more than ${max} names (LSPD_MAX_HARD_LINKS_PER_FILE); store the copies as files, or raise the bound`,
      );
    }
    this.linkNames.set(first, names);
    this.firstName.set(path, first);
  }

  /**
   * Refuse a target that is empty, absolute or odd, or that, resolved from the
   * link's directory through the links known now (LinkWalker, like
   * path_resolution(7): a link component is replaced by its target relative to the
   * link's own directory, `..` pops the physical path, components that do not exist
   * or are files are walked lexically, which can only refuse more than the kernel
   * would), climbs above the root or loops past the kernel's limit.
   */
  private checkLinkTarget(entry: string, path: string, target: string): void {
    if (target === '') throw errors.unsafeEntry(entry, 'symlink without a target');
    if (CONTROL.test(target)) throw errors.unsafeEntry(entry, 'control character in symlink target');
    if (target.startsWith('/')) throw errors.unsafeEntry(entry, 'symlink target is absolute');
    if (Buffer.byteLength(target) > MAX_PATH_BYTES) throw errors.unsafeEntry(entry, 'symlink target too long');
    if (this.opts.deferLinkWalks) return;
    const why = this.walker.checkTarget(path, target);
    if (why) throw errors.unsafeEntry(entry, reasonOf(why));
  }
}

function reasonOf(why: WalkRefusal): string {
  return why === 'budget' ? 'symlinks take too many steps to resolve (a chain built to multiply work)' : why;
}
