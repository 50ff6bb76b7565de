// Validation of a root key `(org, repo, sha)` from the outside world. The key
// becomes a path under the data dir, so the store checks it too, not only routes;
// each part gets its own error code (API.md "Conventions").
import { errors } from '../errors.js';
import { orgName, repoName, sha } from '../api/schemas.js';
import type { RootKey } from './types.js';

export function checkRootKey(p: { org?: unknown; repo?: unknown; sha?: unknown }): RootKey {
  if (!orgName.safeParse(p.org).success) {
    throw errors.badName('org must be 1-100 letters, digits, ".", "_" or "-", starting with a letter or digit.');
  }
  if (!repoName.safeParse(p.repo).success) {
    throw errors.badName('repo must be 1-100 letters, digits, ".", "_" or "-", starting with a letter or digit.');
  }
  if (!sha.safeParse(p.sha).success) {
    throw errors.badSha('sha must be a full commit id of 40 or 64 lowercase hex digits, never a branch or tag name.');
  }
  return { org: p.org as string, repo: p.repo as string, sha: p.sha as string };
}
