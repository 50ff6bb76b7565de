// Which dependencies a stored tree has, per workspace, and whether FETCH may get
// them. A workspace is a directory holding an ecosystem's lockfile (go.mod counts:
// go.sum is its lock). Only first-party toolchains with scripts off are ever run
// (composer --no-scripts --no-plugins; pip installing wheels only, which runs
// nothing); installers that execute package code are refused with a reason the
// caller sees. Without a lockfile nothing is fetched: versions would be resolved
// at fetch time, and the answer would describe a tree nobody built.
import { lstat, readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { recordOf } from './ecosystems/table.js';
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

const pythonMarkers = ['pyproject.toml', 'setup.py', 'setup.cfg', 'Pipfile'];
/** Python locks the fetcher reads (src/fetch/pip-driver.py), most exact first. */
const pythonLocks = ['uv.lock', 'poetry.lock', 'Pipfile.lock'];
const REQUIREMENTS = /^requirements[\w.-]*\.txt$/;

const PY_NO_LOCK =
  'Python dependencies were not fetched: there is no lock file (requirements*.txt with pinned versions, uv.lock, poetry.lock or Pipfile.lock), and without one versions would be resolved at fetch time.';
const PY_MISSING = 'Python dependencies were not fetched: no pinned python3 with pip (python3-pip) is installed.';
const CARGO_MISSING =
  'Rust dependencies were not fetched: the Debian 13 root with the pinned cargo is not made (images/setup.sh makes it; a per-user rustup cargo is not pinned).';
const CARGO_NO_LOCK = 'Rust dependencies were not fetched: Cargo.toml has no Cargo.lock, and without a lock file a fetch would resolve versions at fetch time.';
const COMPOSER_MISSING = 'PHP dependencies were not fetched: no pinned composer (and php) is installed.';
const COMPOSER_NO_LOCK =
  'PHP dependencies were not fetched: composer.json has no composer.lock, and without a lock file an install would resolve versions at fetch time.';
const NPM_NO_LOCK =
  'npm dependencies were not fetched: package.json has no package-lock.json or npm-shrinkwrap.json, and without a lockfile an install would resolve versions at fetch time.';
const YARN_PNPM = 'npm dependencies were not fetched: only a yarn or pnpm lockfile is present and neither tool is pinned.';
const GO_MISSING = 'Go dependencies were not fetched: the go toolchain is not installed.';
const NPM_MISSING = 'npm dependencies were not fetched: npm is not installed.';

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
      // A committed node_modules is the tree's own install: served as it is, nothing to refuse.
      const hasModules = entries.some((e) => e.name === 'node_modules' && e.isDirectory());
      const bareNpm = rel === '' && !hasModules && files.has('package.json') && (await declaresDependencies(join(treeDir, 'package.json')));
      const hasVendor = entries.some((e) => e.name === 'vendor' && e.isDirectory());
      const bareCargo = rel === '' && files.has('Cargo.toml') && !files.has('Cargo.lock') && (await declaresCrates(join(treeDir, 'Cargo.toml')));
      const bareComposer =
        rel === '' && !hasVendor && files.has('composer.json') && !files.has('composer.lock') && (await requiresPackages(join(treeDir, 'composer.json')));
      found.push(
        ...(await bounded(treeDir, rel, files, planDir(rel, files, tools, bareNpm, bareComposer, bareCargo), limits.maxLockfileBytes ?? MAX_LOCKFILE_BYTES)),
      );
      for (const e of entries) {
        // Dirent.isDirectory() is false for a symlink, so links are never followed.
        if (e.isDirectory() && !skipDirs.has(e.name)) next.push(rel === '' ? e.name : `${rel}/${e.name}`);
      }
    }
    level = next.sort();
  }
  return cap(found, limits);
}

function planDir(dir: string, files: Set<string>, tools: Toolchains, bareNpm: boolean, bareComposer: boolean, bareCargo: boolean): PlanItem[] {
  const out: PlanItem[] = [];
  const fetch = (ecosystem: Ecosystem): PlanItem => ({ ecosystem, dir, action: 'fetch' });
  const refuse = (ecosystem: Ecosystem, reason: string): PlanItem => ({ ecosystem, dir, action: 'refuse', reason });

  if (files.has('go.mod')) out.push(tools.go ? fetch('go') : refuse('go', GO_MISSING));

  if (files.has('package-lock.json') || files.has('npm-shrinkwrap.json')) {
    out.push(tools.npm && tools.node ? fetch('npm') : refuse('npm', NPM_MISSING));
  } else if (files.has('yarn.lock') || files.has('pnpm-lock.yaml')) {
    out.push(refuse('npm', YARN_PNPM));
  } else if (bareNpm) {
    out.push(refuse('npm', NPM_NO_LOCK));
  }

  if (files.has('composer.lock')) out.push(tools.composer && tools.php ? fetch('composer') : refuse('composer', COMPOSER_MISSING));
  else if (bareComposer) out.push(refuse('composer', COMPOSER_NO_LOCK));

  // A workspace's Cargo.lock sits beside its root Cargo.toml and covers every member.
  if (files.has('Cargo.lock') && files.has('Cargo.toml')) out.push(tools.cargo && tools.cargoRoot ? fetch('cargo') : refuse('cargo', CARGO_MISSING));
  else if (bareCargo) out.push(refuse('cargo', CARGO_NO_LOCK));

  const pyLock = pythonLocks.some((m) => files.has(m)) || [...files].some((f) => REQUIREMENTS.test(f));
  if (pyLock) out.push(tools.python && tools.pip ? fetch('python') : refuse('python', PY_MISSING));
  else if (pythonMarkers.some((m) => files.has(m))) out.push(refuse('python', PY_NO_LOCK));
  return out;
}

/**
 * A top-level Cargo.toml without a lock is reported only when it names dependencies
 * ([dependencies], [dev-dependencies], [build-dependencies], a target's, or a
 * workspace's): a crate with none needs nothing. A line scan, not a TOML parse: it
 * only decides whether to say why nothing was fetched.
 */
async function declaresCrates(file: string): Promise<boolean> {
  const st = await lstat(file).catch(() => undefined);
  if (!st?.isFile() || st.size > 4 * 1024 * 1024) return false;
  const text = await readFile(file, 'utf8').catch(() => '');
  const lines = text.split('\n');
  let inDeps = false;
  for (const raw of lines) {
    const line = raw.trim();
    if (line.startsWith('[')) {
      const header = line.replace(/\s+/g, '');
      // [dependencies.serde]: a dependency of its own table.
      if (/^\[(?:workspace\.|target\..*\.)?(?:dev-|build-)?dependencies\.[A-Za-z0-9_-]+\]$/.test(header)) return true;
      inDeps = /^\[(?:workspace\.|target\..*\.)?(?:dev-|build-)?dependencies\]$/.test(header);
      continue;
    }
    if (inDeps && /^[A-Za-z0-9_-]+\s*(?:\.|=)/.test(line)) return true;
  }
  return false;
}

/** A top-level composer.json without a lock is reported only when it requires packages (not just php or ext-*). */
async function requiresPackages(file: string): Promise<boolean> {
  const json = await readSmallJson(file);
  return ['require', 'require-dev'].some((k) => {
    const v = json?.[k];
    return typeof v === 'object' && v !== null && Object.keys(v).some((name) => name.includes('/'));
  });
}

async function readSmallJson(file: string): Promise<Record<string, unknown> | undefined> {
  try {
    const st = await lstat(file);
    if (!st.isFile() || st.size > 4 * 1024 * 1024) return undefined;
    const v: unknown = JSON.parse(await readFile(file, 'utf8'));
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined; // unreadable or not JSON: the language server will say so; nothing to fetch
  }
}

/**
 * A package.json without a lockfile is reported (refused) only at the top of the
 * tree and only when it declares dependencies: nested ones are usually members of
 * a monorepo whose lock is higher up, and one with no dependencies needs nothing.
 */
async function declaresDependencies(file: string): Promise<boolean> {
  const pkg = await readSmallJson(file);
  return ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'].some(
    (k) => typeof pkg?.[k] === 'object' && pkg[k] !== null && Object.keys(pkg[k] as object).length > 0,
  );
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
