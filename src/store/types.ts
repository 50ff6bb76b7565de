// The tree store's public face, as routes and the rest of lspd see it.
import type { Readable } from 'node:stream';
import type { RootKey } from '../api/schemas.js';
import type { Language } from '../languages.js';

export type { RootKey };

export interface RootInfo {
  root: RootKey;
  files: number;
  bytes: number;
  languages: Language[];
  /** ISO time the root became visible. */
  createdAt: string;
  /**
   * Which upload of this key the root is: new on every upload (a key can be
   * DELETEd and uploaded again with another tree), so whatever is cached about a
   * root is keyed by it as well as by the key. Written to meta.json.
   */
  generation: string;
  /** File bytes this root added to the disk: all of `bytes`, or an incremental upload's layer (the rest are links to its base's). */
  storedBytes: number;
  /**
   * Disk the root takes holding all its files itself, metadata included
   * (disk-charge.ts); absent in roots stored before lspd counted it.
   */
  diskBytes?: number;
  /** A composed root's disk beside its base: its directories, names, tree.idx, layer and any copies. */
  ownDiskBytes?: number;
  /** The root an incremental upload was composed on (same org and repo). */
  base?: string;
  /** The git tree id of the stored tree (roots stored before lspd kept blob ids have none). */
  gitTree?: string;
}

export interface PutOptions {
  /** The body is gzip'd (Content-Type application/gzip or Content-Encoding gzip). */
  gzip: boolean;
  signal?: AbortSignal;
  /** The body is a layer over this stored root of the same org and repo (OCI whiteouts for deletions). */
  base?: string;
  /** The git tree id the tree must have (x-lspd-git-tree); refused with tree_mismatch otherwise. */
  gitTree?: string;
}

export interface PutResult {
  created: boolean;
  info: RootInfo;
  /** An incremental upload just stored: the paths its layer added, replaced or removed. */
  changed?: string[];
}

export function rootId(k: RootKey): string {
  return `${k.org}/${k.repo}/${k.sha}`;
}

/** Why a root went away: a DELETE, or the disk quota. */
export type RemoveReason = 'deleted' | 'evicted';

/**
 * Told before a root's files are removed, so whoever runs sessions or fetches over
 * it can stop them. The root is already gone from `get()` when this is called.
 */
export type RemoveListener = (key: RootKey, reason: RemoveReason) => void | Promise<void>;

/**
 * The org's package store as the disk quota sees it (src/fetch/package-store.ts):
 * its bytes are the org's, charged once; a root is not charged for its links to
 * the inodes it `holds`; `release` after a root's files are gone frees what no root links.
 */
export interface PackageCharge {
  bytes(org: string): number;
  orgsStoring(): string[];
  holds(org: string): ((ino: number) => boolean) | undefined;
  release(org: string): Promise<void>;
  releaseAll(): Promise<void>;
}

/** Whether something (a session, a query) holds the root; held roots are never evicted. */
export type HoldCheck = (key: RootKey) => boolean;

export interface ListOptions {
  limit: number;
  /** Cursor: the `next` of the previous page. */
  after?: string;
  /** Only roots of orgs this accepts are listed and paged over (the token's orgs); all when absent. */
  orgs?: (org: string) => boolean;
}

export interface ListPage {
  roots: RootInfo[];
  /** Present when more roots follow; pass it as `after`. */
  next?: string;
}
