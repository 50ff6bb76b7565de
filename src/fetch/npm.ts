// The npm fetcher: `npm ci --ignore-scripts` for each workspace holding a
// package-lock.json (or npm-shrinkwrap.json), in the FETCH jail.
//
// The stored tree is immutable and bound read-only, and npm ci writes
// node_modules next to package.json. So the daemon copies package.json and the
// lockfile (and, for npm workspaces, each member's package.json named by the
// lockfile) into <deps>/npm/top/ (or <deps>/npm/ws/<ws>/, step.ts), and npm
// installs there; the tree itself is not even bound into the jail. The SERVE side
// then binds that node_modules read-only over <tree>/<ws>/node_modules, where
// tsserver's module resolution looks for it.
//
// Mount points: bwrap cannot create a directory inside a read-only bind (the
// tree), so <tree>/<ws>/node_modules must exist before a SERVE jail binds over it.
// The jail creates it (src/jail/spawn.ts, preCreateMountPoints) through the tree's
// checked directory fd when a bind lands inside the tree: the daemon owns the
// stored files, and an empty directory changes no file, byte or answer. This
// module never writes the tree; it only leaves out a bind whose mount point would
// be a symlink or a file (the jail would refuse the whole spawn, and a bind through
// a link lands wherever the link points) and says so in the log. A real
// node_modules directory in the tree (vendored) is bound over, as `npm ci` would
// have replaced it.
//
// Scripts: --ignore-scripts on the command line and npm_config_ignore_scripts in
// the environment (the latter also covers git dependencies' `prepare`). The tree's
// .npmrc is never read: it is not copied, and HOME is the jail's private tmp.
import { copyFile, lstat, mkdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { MAX_LOCKFILE_BYTES, isMountPoint, isPlainDir, isRegularFile, isSafeRelDir } from './ecosystems.js';
import { registryReason } from './registry-reason.js';
import { NPM_CACHE_REL, npmRel, under, writableDepsDir, type ServeMount, type StepContext, type StepSpawn } from './step.js';

export async function prepareNpm(ctx: StepContext, ws: string): Promise<StepSpawn> {
  if (!ctx.tools.npm || !ctx.tools.node) throw new Error('npm not installed');
  const src = join(ctx.treeDir, ws);
  const out = await writableDepsDir(ctx, npmRel(ws));
  const dst = out.host;
  const lockName = (await isRegularFile(join(src, 'npm-shrinkwrap.json'))) ? 'npm-shrinkwrap.json' : 'package-lock.json';
  for (const f of ['package.json', lockName]) {
    if (!(await isRegularFile(join(src, f)))) throw new Error(`${f} in ${ws || '.'} is not a regular file`);
    await copyFile(join(src, f), join(dst, f));
  }
  const members = await workspaceMembers(join(src, lockName));
  for (const m of members) {
    if (!(await isPlainDir(src, m)) || !(await isRegularFile(join(src, m, 'package.json')))) continue;
    await mkdir(join(dst, m), { recursive: true });
    await copyFile(join(src, m, 'package.json'), join(dst, m, 'package.json'));
  }
  const cache = await writableDepsDir(ctx, NPM_CACHE_REL);
  // The tree's lockfile (immutable), not the copy the jail may write: what the org's store may give is what it names.
  await ctx.packages?.seedNpm(join(src, lockName), cache.host);
  return {
    argv: [ctx.tools.node, ctx.tools.npm, 'ci', '--ignore-scripts', '--no-audit', '--no-fund', '--no-update-notifier'],
    env: {
      npm_config_registry: ctx.npmRegistry,
      npm_config_cache: cache.at,
      npm_config_ignore_scripts: 'true',
      npm_config_audit: 'false',
      npm_config_fund: 'false',
      npm_config_update_notifier: 'false',
      npm_config_progress: 'false',
      // npm's defaults wait 10 s then 60 s between retries; a registry that fails
      // twice in 12 s is down, and the fetch has a deadline of its own.
      npm_config_fetch_retries: '2',
      npm_config_fetch_retry_mintimeout: '2000',
      npm_config_fetch_retry_maxtimeout: '10000',
      // npm's default waits 5 minutes for one response; the egress proxy answers 504
      // within 10 s for a host that accepts nothing, this covers one that accepts and stalls.
      npm_config_fetch_timeout: '60000',
    },
    binds: [out, cache],
    cwd: out.at,
  };
}

/**
 * Workspace members named by a v2/v3 lockfile: keys of `packages` that are not
 * under node_modules ("packages/a"). Each is a tree-relative dir whose package.json
 * npm ci needs; anything that could leave the workspace is ignored.
 */
export async function workspaceMembers(lockFile: string): Promise<string[]> {
  const st = await lstat(lockFile);
  // Detection refused the fetch of a larger one; this is the second lock (a copy in the deps dir).
  if (st.size > MAX_LOCKFILE_BYTES) return [];
  let lock: { packages?: Record<string, unknown> };
  try {
    lock = JSON.parse(await readFile(lockFile, 'utf8')) as typeof lock;
  } catch {
    return []; // npm ci will report the broken lockfile itself
  }
  const keys = lock.packages && typeof lock.packages === 'object' ? Object.keys(lock.packages) : [];
  return keys.filter((k) => k !== '' && !k.split('/').includes('node_modules') && isSafeRelDir(k)).slice(0, 1000);
}

/** The node_modules dirs of a done workspace that SERVE may bind: both ends plain directories. */
export async function npmServeMounts(treeDir: string, depsDir: string, ws: string, notes?: (line: string) => void): Promise<ServeMount[]> {
  const out: ServeMount[] = [];
  const base = join(depsDir, npmRel(ws));
  const lock = (await isRegularFile(join(base, 'npm-shrinkwrap.json'))) ? 'npm-shrinkwrap.json' : 'package-lock.json';
  const members = (await isRegularFile(join(base, lock))) ? await workspaceMembers(join(base, lock)) : [];
  for (const m of ['', ...members]) {
    const depsRel = under(under(npmRel(ws), m), 'node_modules');
    const treeRel = under(under(ws, m), 'node_modules');
    // The deps side was written by a jailed process: a symlink there would make
    // bwrap bind whatever host path it names. After the jail exits nothing writes
    // here any more, so this check cannot be raced.
    if (!(await isPlainDir(depsDir, depsRel))) continue;
    if (!(await isMountPoint(treeDir, under(ws, m), 'node_modules'))) {
      notes?.(`lspd: ${treeRel} in the tree is a link or a file; the fetched packages are not served there`);
      continue;
    }
    out.push({ host: join(depsDir, depsRel), at: treeRel, treeRel: true });
  }
  return out;
}

export function npmHint(output: string): string | undefined {
  if (/npm ci` can only install packages when your package.json and package-lock.json|are in sync/.test(output)) {
    return 'package.json and the lockfile disagree; npm ci installs only from a lockfile in sync.';
  }
  return registryReason(output);
}
