// What the store needs for incremental roots and tree ids, kept apart from
// store.ts: finding the base an upload composes on, the git tree check, and how a
// composed root is charged against the disk quota.
//
// Charging: a root is charged the disk it takes, metadata included
// (disk-charge.ts: `diskBytes`). A composed root's unchanged files are hard links
// to its base's, so while the base is stored it is charged only its own disk
// (`ownDiskBytes`: every directory and name of its tree, its tree.idx, the data its
// layer wrote and what composing had to copy), and a dependency dir it shares with its base (fetch reuse,
// src/fetch/fetch-reuse.ts) nothing. Once the base is gone those inodes are the
// root's own, so it is charged in full. The sum over roots is then never less than
// the disk really used (a file still shared with another relative is counted
// twice), which is the safe side for a quota.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errors } from '../errors.js';
import { dirBytes } from './disk.js';
import { treeId } from './git-tree.js';
import { gitBlobs, readTreeIndex, type TreeEntry } from './tree-index.js';
import type { RootInfo, RootKey } from './types.js';

/** 409 need_tree naming the base, so the client uploads the whole tree instead. */
export function baseMissing(key: RootKey, base: string, why = 'is not stored on this replica'): Error {
  return errors.needTree(`The base root ${base} ${why}; upload the whole tree instead.`, { root: { org: key.org, repo: key.repo, sha: base }, base });
}

/** The base's tree index; a base stored before lspd kept one cannot be composed on. */
export async function loadBaseIndex(key: RootKey, base: string, baseDir: string): Promise<TreeEntry[]> {
  const entries = await readTreeIndex(baseDir);
  if (!entries) throw baseMissing(key, base, 'has no tree index (it was stored by an older lspd)');
  return entries;
}

/** The stored tree's git tree id; refuses with tree_mismatch when the upload named another. */
export async function checkGitTree(entries: Iterable<TreeEntry>, expected: string | undefined): Promise<string> {
  const computed = await treeId(gitBlobs(entries));
  if (expected !== undefined && expected !== computed) throw errors.treeMismatch(expected, computed);
  return computed;
}

/**
 * The tree bytes a root is charged: its own disk while its base is stored, all
 * of it otherwise. A root stored before lspd counted disk is charged its file bytes.
 */
export function treeCharge(info: RootInfo, baseStored: boolean): number {
  if (info.base !== undefined && baseStored) return info.ownDiskBytes ?? info.storedBytes;
  return info.diskBytes ?? info.bytes;
}

/** In a root's deps dir (the daemon's alone, like fetch.json): the base sha whose fetched dependencies it links. */
export const REUSED_DEPS_FILE = 'reused-from';

export async function markDepsReused(depsDir: string, baseSha: string): Promise<void> {
  await writeFile(join(depsDir, REUSED_DEPS_FILE), baseSha + '\n');
}

/**
 * The deps bytes a root is charged: while it shares its stored base's, only what
 * is its own (its directories, symlinks, and files a link could not share:
 * fetch-reuse copies past EMLINK); else all the dir holds but the files of the
 * org's package store (`shared`: charged to the org once, src/fetch/package-store.ts).
 */
export async function depsCharge(depsDir: string, info: RootInfo, baseStored: boolean, shared?: (ino: number) => boolean): Promise<number> {
  if (info.base !== undefined && baseStored) {
    const from = await readFile(join(depsDir, REUSED_DEPS_FILE), 'utf8').catch(() => '');
    if (from.trim() === info.base) return dirBytes(depsDir, true);
  }
  return dirBytes(depsDir, false, shared);
}
