// PHP: `composer install --no-scripts --no-plugins`, dists only (../composer.ts has the why).
import { join } from 'node:path';
import { composerHint, composerServeMounts, prepareComposer } from '../composer.js';
import { registryReason } from '../registry-reason.js';
import { COMPOSER_CACHE_REL, wsRel } from '../step.js';
import { baseName, fetchIt, inside, readSmallJson, refuse, type DetectDir, type EcosystemRecord } from './record.js';

const INPUTS = new Set(['composer.json', 'composer.lock', 'auth.json']);

const MISSING = 'PHP dependencies were not fetched: no pinned composer (and php) is installed.';
const NO_LOCK =
  'PHP dependencies were not fetched: composer.json has no composer.lock, and without a lock file an install would resolve versions at fetch time.';

/** A top-level composer.json without a lock (and no committed vendor/) is reported only when it requires packages (not just php or ext-*). */
async function bare({ treeDir, dir, files, dirs }: DetectDir): Promise<boolean> {
  if (dir !== '' || dirs.has('vendor') || !files.has('composer.json')) return false;
  const json = await readSmallJson(join(treeDir, 'composer.json'));
  return ['require', 'require-dev'].some((k) => {
    const v = json?.[k];
    return typeof v === 'object' && v !== null && Object.keys(v).some((name) => name.includes('/'));
  });
}

export const composer: EcosystemRecord = {
  name: 'composer',
  command: 'composer install',
  // Packagist's metadata; locked dists are archives on the code hosts packages live on.
  defaultHosts: ['repo.packagist.org:443', 'api.github.com:443', 'codeload.github.com:443', 'gitlab.com:443', 'bitbucket.org:443'],
  lockfiles: ['composer.json', 'composer.lock'],
  detect: async (d, tools) => {
    if (d.files.has('composer.lock')) return tools.composer && tools.php ? fetchIt : refuse(MISSING);
    return (await bare(d)) ? refuse(NO_LOCK) : undefined;
  },
  outputDir: 'composer',
  scratchDirs: [COMPOSER_CACHE_REL],
  prepare: prepareComposer,
  hint: (output) => composerHint(output) ?? registryReason(output),
  outputRel: (ws) => wsRel('composer', ws),
  serveMounts: composerServeMounts,
  readsInput: (path, ws) => inside(path, ws) && (INPUTS.has(baseName(path)) || path.split('/').includes('vendor')),
};
