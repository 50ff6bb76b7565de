// Which dependencies a stored tree has, per workspace, and whether FETCH may get
// them: this walks the tree and asks each ecosystem's record (`detect`, in the
// table's order) about each dir. A workspace is a directory holding an ecosystem's
// lockfile (go.mod counts: go.sum is its lock). Only first-party toolchains with scripts off are ever run
// (composer --no-scripts --no-plugins; pip installing wheels only, which runs
// nothing); installers that execute package code are refused with a reason the
// caller sees. Without a lockfile nothing is fetched: versions would be resolved
// at fetch time, and the answer would describe a tree nobody built.
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { ecosystemTable, recordOf } from './ecosystems/table.js';
import type { Ecosystem, PlanItem, Toolchains } from './types.js';

export interface DetectLimits {
  /** Directory entries looked at before the walk gives up (the tree's file cap is a fine value). */
  maxEntries: number;
  /** Deepest directory looked into. */
  maxDepth: number;
  /** Most workspaces fetched per ecosystem; more are reported skipped, not run (each is a jail spawn). */
  maxWorkspaces: number;
  /** A lockfile or manifest driving a fetch larger than this refuses that fetch, unparsed (MAX_LOCKFILE_BYTES when absent). */
  maxLockfileBytes?: number;
}

/**
 * The largest lockfile or manifest that drives a fetch (each record's `lockfiles`,
 * src/fetch/ecosystems/: package.json and its lock, go.mod, go.sum, composer.json
 * and .lock, Python locks and requirements files). The daemon parses an npm
 * lockfile on its own thread (for workspace members) and a tool parses each in the
 * jail: past this, the fetch is refused with the reason, nothing parsed. The
 * largest real lockfiles are a few tens of MiB.
 */
export const MAX_LOCKFILE_BYTES = 32 * 1024 * 1024;

export const defaultDetectLimits: DetectLimits = { maxEntries: 200_000, maxDepth: 32, maxWorkspaces: 16, maxLockfileBytes: MAX_LOCKFILE_BYTES };

/**
 * Directories never searched: installed dependencies (node_modules, vendor) are not
 * the tree's own workspaces, .git is not source, and Go ignores testdata (its
 * go.mod files are fixtures whose requirements are usually fake).
 */
const skipDirs = new Set(['node_modules', 'vendor', '.git', 'testdata', '.hg', '.svn']);

/** Walk the tree (never following links) and plan one item per (ecosystem, workspace). */
export async function detect(treeDir: string, tools: Toolchains, limits: DetectLimits = defaultDetectLimits): Promise<PlanItem[]> {
  const found: PlanItem[] = [];
  let seen = 0;
  // Breadth-first so that when a cap bites, the shallow (usually main) workspaces win.
  let level: string[] = [''];
  for (let depth = 0; depth <= limits.maxDepth && level.length > 0; depth++) {
    const next: string[] = [];
    for (const rel of level) {
      let entries;
      try {
        entries = await readdir(join(treeDir, rel), { withFileTypes: true });
      } catch {
        continue; // vanished or unreadable: nothing to plan there
      }
      seen += entries.length;
      if (seen > limits.maxEntries) return cap(found, limits);
      const files = new Set(entries.filter((e) => e.isFile()).map((e) => e.name));
      const dirs = new Set(entries.filter((e) => e.isDirectory()).map((e) => e.name));
      const items: PlanItem[] = [];
      for (const r of ecosystemTable) {
        const v = await r.detect({ treeDir, dir: rel, files, dirs }, tools);
        if (v)
          items.push(
            v.action === 'fetch' ? { ecosystem: r.name, dir: rel, action: 'fetch' } : { ecosystem: r.name, dir: rel, action: 'refuse', reason: v.reason },
          );
      }
      found.push(...(await bounded(treeDir, rel, files, items, limits.maxLockfileBytes ?? MAX_LOCKFILE_BYTES)));
      for (const e of entries) {
        // Dirent.isDirectory() is false for a symlink, so links are never followed.
        if (e.isDirectory() && !skipDirs.has(e.name)) next.push(rel === '' ? e.name : `${rel}/${e.name}`);
      }
    }
    level = next.sort();
  }
  return cap(found, limits);
}

/** Fetches whose lockfile or manifest is over the bound become refusals naming the file and its size. */
async function bounded(treeDir: string, dir: string, files: Set<string>, items: PlanItem[], maxBytes: number): Promise<PlanItem[]> {
  const out: PlanItem[] = [];
  for (const it of items) {
    const locks = it.action === 'fetch' ? recordOf(it.ecosystem)?.lockfiles : undefined;
    if (!locks) {
      out.push(it);
      continue;
    }
    let over: string | undefined;
    for (const name of [...files].filter((f) => locks.some((l) => (typeof l === 'string' ? l === f : l.test(f)))).sort()) {
      const st = await lstat(join(treeDir, dir, name)).catch(() => undefined);
      if (st?.isFile() && st.size > maxBytes) {
        over = `${name} is ${mib(st.size)}, over the ${mib(maxBytes)} bound for a lockfile or manifest: not parsed, dependencies not fetched.`;
        break;
      }
    }
    out.push(over ? { ecosystem: it.ecosystem, dir, action: 'refuse', reason: over } : it);
  }
  return out;
}

const mib = (n: number) => (n < 1024 * 1024 ? `${Math.ceil(n / 1024)} KiB` : `${(n / (1024 * 1024)).toFixed(n < 10 * 1024 * 1024 ? 1 : 0)} MiB`);

function cap(items: PlanItem[], limits: DetectLimits): PlanItem[] {
  const count = new Map<Ecosystem, number>();
  return items.map((it) => {
    if (it.action !== 'fetch') return it;
    const n = (count.get(it.ecosystem) ?? 0) + 1;
    count.set(it.ecosystem, n);
    if (n <= limits.maxWorkspaces) return it;
    return { ...it, action: 'refuse', reason: `Not fetched: more than ${limits.maxWorkspaces} ${it.ecosystem} workspaces in one tree.` };
  });
}

/** True when a tree-relative dir is safe to join under a host dir (detection only yields such, but state files are re-read). */
export function isSafeRelDir(dir: string): boolean {
  if (dir === '') return true;
  if (dir.startsWith('/') || dir.includes('\\') || dir.includes('\0')) return false;
  return dir.split('/').every((seg) => seg !== '' && seg !== '.' && seg !== '..');
}

/** lstat every component: true when `rel` under `base` is a real directory reached through no symlink. */
export async function isPlainDir(base: string, rel: string): Promise<boolean> {
  let p = base;
  for (const seg of rel === '' ? [] : rel.split('/')) {
    p = join(p, seg);
    const st = await lstat(p).catch(() => undefined);
    if (!st || !st.isDirectory()) return false;
  }
  const st = await lstat(base).catch(() => undefined);
  return !!st && st.isDirectory();
}

/** lstat: a regular file, not a link. */
export async function isRegularFile(p: string): Promise<boolean> {
  const st = await lstat(p).catch(() => undefined);
  return !!st && st.isFile();
}

/**
 * Can SERVE bind a fetched dir over <tree>/<dir>/<name>? <dir> must be a plain
 * directory and <name> absent (the jail creates the mount point) or a directory (a
 * committed node_modules or vendor is bound over, as an install would replace it);
 * never a link or a file.
 */
export async function isMountPoint(treeDir: string, dir: string, name: string): Promise<boolean> {
  if (!(await isPlainDir(treeDir, dir))) return false;
  const st = await lstat(join(treeDir, dir, name)).catch(() => undefined);
  return st === undefined || st.isDirectory();
}
