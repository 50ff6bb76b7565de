// npm: `npm ci --ignore-scripts` per lockfile workspace (../npm.ts has the why).
import { npmHint, npmServeMounts, prepareNpm } from '../npm.js';
import { npmRel } from '../step.js';
import { baseName, inside, type EcosystemRecord } from './record.js';

/** package.json of the workspace and its members, the lock, .npmrc (never read, but it is the tree's npm config), and anything committed under node_modules. */
const INPUTS = new Set(['package.json', 'package-lock.json', 'npm-shrinkwrap.json', 'yarn.lock', 'pnpm-lock.yaml', '.npmrc']);

export const npm: EcosystemRecord = {
  name: 'npm',
  command: 'npm ci',
  defaultHosts: ['registry.npmjs.org:443'],
  lockfiles: ['package.json', 'package-lock.json', 'npm-shrinkwrap.json'],
  prepare: prepareNpm,
  hint: npmHint,
  outputRel: npmRel,
  serveMounts: npmServeMounts,
  readsInput: (path, ws) => inside(path, ws) && (INPUTS.has(baseName(path)) || path.split('/').includes('node_modules')),
};
