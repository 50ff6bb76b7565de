// A server's npm packages bound as a node_modules of their own, apart from the daemon's
// whole one: a tsserver resolves the plugins a tree's tsconfig names from its probe
// locations, so a location holding only these packages lets a tree name nothing else
// (see the vue and angular rows). Read from package.json files at boot, nothing run.
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative, sep } from 'node:path';
import type { Bind } from '../../jail/types.js';

/** Where `name` resolves from `fromDir` as Node's require would (node_modules of it and its parents, up to `top`). */
function findPackage(name: string, fromDir: string, top: string): string | undefined {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    if (basename(dir) !== 'node_modules') {
      const candidate = join(dir, 'node_modules', name);
      if (existsSync(join(candidate, 'package.json'))) return candidate;
    }
    if (dir === top || dir === dirname(dir)) return undefined;
  }
}

function dependenciesOf(dir: string): string[] {
  try {
    const pj = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
    return Object.keys(pj.dependencies ?? {});
  } catch {
    return [];
  }
}

/**
 * The packages `roots` and everything their `dependencies` reach, found in
 * `nodeModulesHost`, as binds under `${at}/node_modules`: one bind per top-level
 * package (a nested node_modules comes with the package holding it). A package not
 * installed is left out; the row's probe says the server is unavailable.
 */
export function packageClosureBinds(nodeModulesHost: string, roots: readonly string[], at: string): Bind[] {
  const top = dirname(nodeModulesHost);
  const seen = new Set<string>();
  const tops = new Set<string>();
  const visit = (name: string, fromDir: string): void => {
    const dir = findPackage(name, fromDir, top);
    if (!dir || seen.has(dir)) return;
    seen.add(dir);
    const parts = relative(nodeModulesHost, dir).split(sep);
    if (parts[0] === '..') return;
    tops.add(parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!);
    for (const dep of dependenciesOf(dir)) visit(dep, dir);
  };
  for (const r of roots) visit(r, top);
  return [...tops].sort().map((name) => ({ host: join(nodeModulesHost, name), at: `${at}/node_modules/${name}` }));
}
