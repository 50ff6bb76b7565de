// What a root costs the disk, counted from its entries as ext4 allocates them, so
// an org's quota charge lands near `du -sB1` of its roots whatever the tree's
// shape: a tree of empty directories or of empty files with long names holds
// real blocks (a directory's, its parent's entries, tree.idx) though its files
// hold no bytes (issue 30: 20,000 empty directories took 82 MB charged 4.6 KB).
//
// The model (ext4, https://www.kernel.org/doc/html/latest/filesystems/ext4/):
// - a file's data in whole blocks (no inline data: ext4's default), once per
//   inode, so a tar hard link costs its directory entry only;
// - a directory one block while its entries (ext4_dir_entry_2: 8 bytes and the
//   name padded to 4) and "." and ".." fit in it, packed; past that ext4 hashes
//   it (htree): the first block becomes the index's root, and the entries move
//   to leaves split in two as they fill, about two thirds full: measured here
//   1.0-1.8x the raw entry bytes (the spread is the hash's), 1.45x on average
//   over 40 to 5,000 entries of 2 to 120 bytes, and never fewer than the two
//   leaves of the first split. (A flat 1.5x with no index block undercharged a
//   900-entry directory by one block of its five, every time.)
// - a symlink whose target is under 60 bytes lives in its inode (fast symlink),
//   a longer one takes a block;
// - inodes themselves are not charged: mkfs preallocates the inode table, and
//   `du` never counts it, so charging one would put every tree of small files
//   far above what the disk shows; an entry still costs its directory entry and
//   its tree.idx record, and LSPD_MAX_TREE_FILES bounds them per root;
// - the root's own files: tree.idx (its records are counted exactly as
//   tree-index.ts encodes them), meta.json (one block), the root and deps dirs.
import type { TreeEntry } from './tree-index.js';
import { nextTurn, turnCounter } from '../util/event-loop.js';

const DIRENT_HEADER_BYTES = 8;
/** "." and "..": 12 bytes each at the head of a directory's first block. */
const DOT_ENTRIES_BYTES = 24;
const HTREE_FILL_FACTOR = 1.45;
/** A directory's first split: its index root and two leaves. */
const HTREE_MIN_LEAVES = 2;
/** ext4 keeps a symlink target shorter than this in the inode itself (i_block, 60 bytes). */
const FAST_SYMLINK_BYTES = 60;
/** "LSPDIDX1" (tree-index.ts). */
const INDEX_MAGIC_BYTES = 8;
/** The root dir, its deps dir (empty until a fetch, which is charged on its own) and meta.json: a block each. */
const ROOT_FIXED_BLOCKS = 3;

const roundUp = (n: number, block: number) => Math.ceil(n / block) * block;

/** Blocks a file of `size` bytes holds. */
export function fileDiskBytes(size: number, blockBytes: number): number {
  return roundUp(size, blockBytes);
}

/** Blocks a directory holding `raw` bytes of entries takes: one packed, else its htree's root and leaves. */
export function directoryDiskBytes(raw: number, blockBytes: number): number {
  if (raw + DOT_ENTRIES_BYTES <= blockBytes) return blockBytes;
  return blockBytes + Math.max(HTREE_MIN_LEAVES * blockBytes, roundUp(raw * HTREE_FILL_FACTOR, blockBytes));
}

/** Blocks a symlink to `target` holds beside its inode. */
export function symlinkDiskBytes(target: string, blockBytes: number): number {
  return Buffer.byteLength(target) < FAST_SYMLINK_BYTES ? 0 : blockBytes;
}

/** The bytes of one tree.idx record (tree-index.ts encodeTreeIndex). */
function indexRecordBytes(path: string, kind: TreeEntry['kind'], target?: string): number {
  const tail = kind === 'file' || kind === 'exec' ? 28 : kind === 'symlink' ? 20 + Buffer.byteLength(target ?? '') + 1 : 0;
  return 1 + Buffer.byteLength(path) + 1 + tail;
}

function parentOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i < 0 ? '' : path.slice(0, i);
}

/**
 * A running count of one root's disk, entry by entry (admission calls it as the
 * tar streams, so an upload is refused as soon as it passes its org's room).
 * `bytes` is the whole root: its directories, every entry's directory slot and
 * tree.idx record, its own files' data, and the fixed files beside the tree.
 */
export class TreeCharge {
  /** Raw directory-entry bytes each directory holds ('' is the tree's top). */
  private readonly dirents = new Map<string, number>();
  /** Directories charged their first block (entries may name a directory after what is in it). */
  private readonly dirs = new Set<string>(['']);
  private dirBytes: number;
  private indexBytes = INDEX_MAGIC_BYTES;
  /** Data blocks of the files and symlinks this root wrote itself. */
  dataBytes = 0;

  constructor(readonly blockBytes: number) {
    this.dirBytes = blockBytes; // the tree's top directory
  }

  /** What the root takes on disk now (what the quota charges it). */
  get bytes(): number {
    return this.dirBytes + roundUp(this.indexBytes, this.blockBytes) + ROOT_FIXED_BLOCKS * this.blockBytes + this.dataBytes;
  }

  /** Record an entry's directory slot, its tree.idx record, and a directory's first block; data is added apart. */
  add(path: string, kind: TreeEntry['kind'], target?: string): void {
    const parent = parentOf(path);
    const before = this.dirents.get(parent) ?? 0;
    const after = before + direntBytes(path, parent);
    this.dirBytes += directoryDiskBytes(after, this.blockBytes) - directoryDiskBytes(before, this.blockBytes);
    this.dirents.set(parent, after);
    this.indexBytes += indexRecordBytes(path, kind, target);
    if (kind === 'dir' && !this.dirs.has(path)) {
      this.dirs.add(path);
      this.dirBytes += this.blockBytes;
    }
  }
}

/** ext4_dir_entry_2: inode, rec_len, name_len, file_type, then the name padded to 4 bytes. */
function direntBytes(path: string, parent: string): number {
  const name = parent === '' ? path : path.slice(parent.length + 1);
  return DIRENT_HEADER_BYTES + roundUp(Buffer.byteLength(name), 4);
}

/**
 * A composed root's charge: `own` while its base is stored (every directory and
 * entry slot and its tree.idx are its own, and so is the data its layer wrote:
 * `layerDataBytes`; the base's files are links), `whole` once it holds every
 * file alone. Copies a compose makes (EMLINK, EXDEV) are added by the caller.
 */
export async function composedCharge(entries: readonly TreeEntry[], fromBase: readonly TreeEntry[], layerDataBytes: number, blockBytes: number) {
  const due = turnCounter();
  const c = new TreeCharge(blockBytes);
  for (const e of entries) {
    c.add(e.path, e.kind, e.kind === 'symlink' ? e.target : undefined);
    if (due(e.path.length + (e.kind === 'symlink' ? e.target.length : 0))) await nextTurn();
  }
  let baseData = 0;
  for (const e of fromBase) {
    if (e.kind === 'file' || e.kind === 'exec') baseData += fileDiskBytes(e.size, blockBytes);
    else if (e.kind === 'symlink') baseData += symlinkDiskBytes(e.target, blockBytes);
    if (due(e.kind === 'symlink' ? e.target.length : 0)) await nextTurn();
  }
  c.dataBytes = layerDataBytes;
  const own = c.bytes;
  return { own, whole: own + baseData };
}
