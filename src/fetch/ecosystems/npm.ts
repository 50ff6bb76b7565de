// npm: `npm ci --ignore-scripts` per lockfile workspace (../npm.ts has the why).
import { join } from 'node:path';
import { npmHint, npmServeMounts, prepareNpm } from '../npm.js';
import { NPM_CACHE_REL, npmRel } from '../step.js';
import { baseName, fetchIt, inside, readSmallJson, refuse, type DetectDir, type EcosystemRecord } from './record.js';

/** package.json of the workspace and its members, the lock, .npmrc (never read, but it is the tree's npm config), and anything committed under node_modules. */
const INPUTS = new Set(['package.json', 'package-lock.json', 'npm-shrinkwrap.json', 'yarn.lock', 'pnpm-lock.yaml', '.npmrc']);

const NO_LOCK =
  'npm dependencies were not fetched: package.json has no package-lock.json or npm-shrinkwrap.json, and without a lockfile an install would resolve versions at fetch time.';
const YARN_PNPM = 'npm dependencies were not fetched: only a yarn or pnpm lockfile is present and neither tool is pinned.';
const MISSING = 'npm dependencies were not fetched: npm is not installed.';

/**
 * A package.json without a lockfile is reported (refused) only at the top of the
 * tree and only when it declares dependencies: nested ones are usually members of
 * a monorepo whose lock is higher up, and one with no dependencies needs nothing. A
 * committed node_modules is the tree's own install: served as it is, nothing to refuse.
 */
async function bare({ treeDir, dir, files, dirs }: DetectDir): Promise<boolean> {
  if (dir !== '' || dirs.has('node_modules') || !files.has('package.json')) return false;
  const pkg = await readSmallJson(join(treeDir, 'package.json'));
  return ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies'].some(
    (k) => typeof pkg?.[k] === 'object' && pkg[k] !== null && Object.keys(pkg[k] as object).length > 0,
  );
}

export const npm: EcosystemRecord = {
  name: 'npm',
  command: 'npm ci',
  defaultHosts: ['registry.npmjs.org:443'],
  lockfiles: ['package.json', 'package-lock.json', 'npm-shrinkwrap.json'],
  detect: async (d, tools) => {
    const { files } = d;
    if (files.has('package-lock.json') || files.has('npm-shrinkwrap.json')) return tools.npm && tools.node ? fetchIt : refuse(MISSING);
    if (files.has('yarn.lock') || files.has('pnpm-lock.yaml')) return refuse(YARN_PNPM);
    return (await bare(d)) ? refuse(NO_LOCK) : undefined;
  },
  outputDir: 'npm',
  scratchDirs: [NPM_CACHE_REL],
  prepare: prepareNpm,
  hint: npmHint,
  outputRel: npmRel,
  serveMounts: npmServeMounts,
  readsInput: (path, ws) => inside(path, ws) && (INPUTS.has(baseName(path)) || path.split('/').includes('node_modules')),
};
