// PHP: `composer install --no-scripts --no-plugins`, dists only (../composer.ts has the why).
import { composerHint, composerServeMounts, prepareComposer } from '../composer.js';
import { registryReason } from '../registry-reason.js';
import { wsRel } from '../step.js';
import { baseName, inside, type EcosystemRecord } from './record.js';

const INPUTS = new Set(['composer.json', 'composer.lock', 'auth.json']);

export const composer: EcosystemRecord = {
  name: 'composer',
  command: 'composer install',
  // Packagist's metadata; locked dists are archives on the code hosts packages live on.
  defaultHosts: ['repo.packagist.org:443', 'api.github.com:443', 'codeload.github.com:443', 'gitlab.com:443', 'bitbucket.org:443'],
  lockfiles: ['composer.json', 'composer.lock'],
  prepare: prepareComposer,
  hint: (output) => composerHint(output) ?? registryReason(output),
  outputRel: (ws) => wsRel('composer', ws),
  serveMounts: composerServeMounts,
  readsInput: (path, ws) => inside(path, ws) && (INPUTS.has(baseName(path)) || path.split('/').includes('vendor')),
};
