// Rebuilds the store's in-memory index from disk at open: every
// roots/<org>/<repo>/<sha>/meta.json that names itself correctly is a root; its
// mtime is the root's last use (the store moves it forward as the root is used).
// A meta.json written before roots had generations gets one derived from the
// files it describes, stable across restarts and never equal to a new upload's.
// Anything else under roots/ is reported as junk for the store to remove.
import { createHash } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Language } from '../languages.js';
import { SHA_RE } from '../api/schemas.js';
import { checkRootKey } from './root-key.js';
import type { RootInfo, RootKey } from './types.js';

export interface IndexEntry {
  key: RootKey;
  info: RootInfo;
  /** Host path of roots/<org>/<repo>/<sha>. */
  dir: string;
  treeBytes: number;
  depsBytes: number;
  lastUsedMs: number;
  /** When lastUsedMs was last written to meta.json's mtime. */
  persistedUseMs: number;
}

export async function loadIndex(rootsDir: string, metaName: string): Promise<{ entries: IndexEntry[]; junk: string[] }> {
  const entries: IndexEntry[] = [];
  const junk: string[] = [];
  for (const org of await readdir(rootsDir)) {
    const orgDir = join(rootsDir, org);
    const repos = await subdirs(orgDir);
    if (!repos) junk.push(orgDir);
    for (const repo of repos ?? []) {
      const repoDir = join(orgDir, repo);
      const shas = await subdirs(repoDir);
      if (!shas) junk.push(repoDir);
      for (const sha of shas ?? []) {
        const dir = join(repoDir, sha);
        const e = await readEntry(dir, metaName, { org, repo, sha });
        if (e) entries.push(e);
        else junk.push(dir);
      }
    }
  }
  return { entries, junk };
}

/** Names in a directory, or undefined when it is not a readable directory. */
function subdirs(dir: string): Promise<string[] | undefined> {
  return readdir(dir).catch(() => undefined);
}

async function readEntry(dir: string, metaName: string, names: RootKey): Promise<IndexEntry | undefined> {
  try {
    const key = checkRootKey(names);
    const metaPath = join(dir, metaName);
    const [text, st] = await Promise.all([readFile(metaPath, 'utf8'), stat(metaPath)]);
    const m = JSON.parse(text) as Partial<Record<keyof RootInfo, unknown>> & { version?: number };
    if (m.version !== 1 || typeof m.files !== 'number' || typeof m.bytes !== 'number' || !Array.isArray(m.languages)) return undefined;
    const named = m.root as Partial<RootKey> | undefined;
    if (named?.org !== key.org || named.repo !== key.repo || named.sha !== key.sha) return undefined;
    const createdAt = String(m.createdAt ?? st.birthtime.toISOString());
    const info: RootInfo = {
      root: key,
      files: m.files,
      bytes: m.bytes,
      languages: m.languages as Language[],
      createdAt,
      generation: typeof m.generation === 'string' && m.generation !== '' ? m.generation : legacyGeneration(dir, createdAt, st.ino),
      // Roots stored before incremental uploads existed wrote all their bytes and name no base or tree id.
      storedBytes: typeof m.storedBytes === 'number' ? m.storedBytes : m.bytes,
      ...(typeof m.diskBytes === 'number' ? { diskBytes: m.diskBytes } : {}),
      ...(typeof m.ownDiskBytes === 'number' ? { ownDiskBytes: m.ownDiskBytes } : {}),
      ...(typeof m.base === 'string' && SHA_RE.test(m.base) ? { base: m.base } : {}),
      ...(typeof m.gitTree === 'string' && /^[0-9a-f]{40}$/.test(m.gitTree) ? { gitTree: m.gitTree } : {}),
    };
    // The store charges treeBytes once every root is loaded (a composed root's depends on its base).
    return { key, info, dir, treeBytes: m.bytes, depsBytes: 0, lastUsedMs: st.mtimeMs, persistedUseMs: st.mtimeMs };
  } catch {
    return undefined;
  }
}

/** A generation for a root stored before there were any: its creation stamp and meta.json's inode, hashed. */
function legacyGeneration(dir: string, createdAt: string, ino: number): string {
  return 'legacy-' + createHash('sha256').update(`${dir}\u0000${createdAt}\u0000${ino}`).digest('hex').slice(0, 16);
}
