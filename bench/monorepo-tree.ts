// bench/monorepo's generated monorepo: what a large TypeScript repository looks like
// to lspd, made on the spot so the bench needs no network.
//   packages/p<i>/   an npm workspace each (@mono/p<i>), src/index.ts importing the
//                    next package through a tsconfig `paths` alias (@p<i+1>/index, as
//                    playwright's @isomorphic/*) and one npm package, plus filler modules
//   tsconfig.json    the aliases; package.json with `workspaces`; package-lock.json (v3)
//                    naming every workspace and `deps` registry packages (dep-000 reaches
//                    them all: dep-k depends on dep-(2k+1) and dep-(2k+2)), their
//                    `resolved` on registry.npmjs.org, which npm rewrites to the
//                    configured registry (its replace-registry-host default)
//   tools/py/, scripts/, native/   a little Python, shell and C: the servers /ask must
//                    leave asleep when a name is only in Python
// The registry packages are gzip'd npm tarballs (package/...), written into a dir that
// test/helpers/npm-registry.ts serves.
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';
import type { Spec } from './monorepo-spec.js';

export interface MonorepoShape {
  packages: number;
  filesPerPackage: number;
  deps: number;
  /** Unpacked size of each registry package, about (playwright's 682 lockfile packages: 550 MB, 800 KiB each). */
  depKiB: number;
}

const pad = (n: number) => String(n).padStart(3, '0');
const depName = (k: number) => `dep-${pad(k)}`;
const depFn = (k: number) => `depFn${pad(k)}`;
/** Deterministic filler text that does not compress to nothing (a real package's files are not zeros). */
const filler = (seed: string, lines: number) => {
  const out: string[] = [];
  let h = createHash('sha256').update(seed).digest('hex');
  for (let i = 0; i < lines; i++) {
    h = createHash('sha256').update(h).digest('hex');
    out.push(`  // ${h}`);
  }
  return out.join('\n');
};

/** A tar (plain, uncompressed) of `files`, as `git archive` gives one. */
export async function tarOfFiles(files: Map<string, string | Buffer>): Promise<Buffer> {
  const p = pack();
  for (const [name, data] of files) p.entry({ name, mode: 0o644, type: 'file' }, typeof data === 'string' ? Buffer.from(data) : data);
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

function depChildren(k: number, deps: number): number[] {
  return [2 * k + 1, 2 * k + 2].filter((c) => c < deps);
}

/** Write dep-000..dep-<deps-1> as `<name>-1.0.0.tgz` into dir, of about depKiB each unpacked; their lockfile entries. */
export async function writeRegistryPackages(dir: string, deps: number, depKiB: number): Promise<Record<string, unknown>> {
  // 8 parts of ~67-byte filler lines make up the size.
  const linesPerPart = Math.max(1, Math.round((depKiB * 1024) / 8 / 67));
  const entries: Record<string, unknown> = {};
  for (let k = 0; k < deps; k++) {
    const children = Object.fromEntries(depChildren(k, deps).map((c) => [depName(c), '1.0.0']));
    const files = new Map<string, string>();
    files.set(
      'package/package.json',
      JSON.stringify({ name: depName(k), version: '1.0.0', main: 'index.js', types: 'index.d.ts', dependencies: children }, null, 2),
    );
    files.set('package/index.d.ts', `/** ${depName(k)}'s one function. */\nexport declare function ${depFn(k)}(x: number): number;\n`);
    files.set('package/index.js', `exports.${depFn(k)} = function (x) {\n  return x + ${k};\n};\n`);
    for (let f = 0; f < 8; f++) files.set(`package/lib/part${f}.js`, `module.exports = function part${f}() {\n${filler(`${k}/${f}`, linesPerPart)}\n};\n`);
    files.set('package/README.md', `# ${depName(k)}\n\n${filler(`readme ${k}`, 20)}\n`);
    const tgz = gzipSync(await tarOfFiles(files));
    writeFileSync(join(dir, `${depName(k)}-1.0.0.tgz`), tgz);
    entries[`node_modules/${depName(k)}`] = {
      version: '1.0.0',
      resolved: `https://registry.npmjs.org/${depName(k)}/-/${depName(k)}-1.0.0.tgz`,
      integrity: 'sha512-' + createHash('sha512').update(tgz).digest('base64'),
      license: 'MIT',
      ...(Object.keys(children).length ? { dependencies: children } : {}),
    };
  }
  return entries;
}

/** The tree's files and the questions bench/monorepo asks of it. */
export function monorepoTree(shape: MonorepoShape, depEntries: Record<string, unknown>): { files: Map<string, string>; spec: Spec } {
  const { packages, filesPerPackage, deps } = shape;
  const files = new Map<string, string>();
  const paths: Record<string, string[]> = {};
  const lockPackages: Record<string, unknown> = {};
  const wsDep = (i: number) => (i * 7) % deps;
  for (let i = 0; i < packages; i++) {
    paths[`@p${i}/*`] = [`./packages/p${i}/src/*`];
    const dependencies = { [depName(wsDep(i))]: '1.0.0' };
    files.set(`packages/p${i}/package.json`, JSON.stringify({ name: `@mono/p${i}`, version: '1.0.0', private: true, dependencies }, null, 2) + '\n');
    lockPackages[`node_modules/@mono/p${i}`] = { resolved: `packages/p${i}`, link: true };
    lockPackages[`packages/p${i}`] = { name: `@mono/p${i}`, version: '1.0.0', dependencies };
    const next = i + 1 < packages ? i + 1 : undefined;
    const index = [
      ...(next !== undefined ? [`import { p${next}Helper } from '@p${next}/index';`] : []),
      `import { ${depFn(wsDep(i))} } from '${depName(wsDep(i))}';`,
      '',
      `/** Package p${i}'s helper. */`,
      `export function p${i}Helper(x: number): number {`,
      `  return ${next !== undefined ? `p${next}Helper(x)` : 'x'} + ${depFn(wsDep(i))}(x);`,
      '}',
      '',
      `export class P${i}Service {`,
      `  run(n: number): number {`,
      `    return p${i}Helper(n) * 2;`,
      '  }',
      '}',
      '',
    ].join('\n');
    files.set(`packages/p${i}/src/index.ts`, index);
    for (let f = 0; f < filesPerPackage - 1; f++) {
      files.set(
        `packages/p${i}/src/mod${f}.ts`,
        [
          `import { p${i}Helper } from './index';`,
          '',
          `export function p${i}Mod${f}(values: number[]): number {`,
          `  let total = 0;`,
          `  for (const v of values) total += p${i}Helper(v);`,
          `  return total;`,
          '}',
          '',
          `export const p${i}Table${f} = {`,
          filler(`p${i}/${f}`, 40).replace(/\/\/ ([0-9a-f]+)/g, (_m, h: string) => `k${h.slice(0, 12)}: '${h}',`),
          '};',
          '',
        ].join('\n'),
      );
    }
  }
  const rootDevDeps = { [depName(0)]: '1.0.0' };
  files.set(
    'package.json',
    JSON.stringify({ name: 'mono', version: '1.0.0', private: true, workspaces: ['packages/*'], devDependencies: rootDevDeps }, null, 2) + '\n',
  );
  files.set(
    'tsconfig.json',
    JSON.stringify(
      {
        compilerOptions: { target: 'ES2022', module: 'ESNext', moduleResolution: 'bundler', strict: true, skipLibCheck: true, noEmit: true, paths },
        include: ['packages'],
      },
      null,
      2,
    ) + '\n',
  );
  const lock = {
    name: 'mono',
    version: '1.0.0',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'mono', version: '1.0.0', workspaces: ['packages/*'], devDependencies: rootDevDeps },
      ...Object.fromEntries(Object.entries({ ...lockPackages, ...depEntries }).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
    },
  };
  files.set('package-lock.json', JSON.stringify(lock, null, 2) + '\n');
  // A name only Python files mention, and the languages a polyglot monorepo also has.
  files.set('tools/py/reckon.py', 'def monorepo_reckoner(values: list[int]) -> int:\n    """Sums what it is given."""\n    return sum(values)\n');
  files.set('tools/py/main.py', 'from reckon import monorepo_reckoner\n\nprint(monorepo_reckoner([1, 2, 3]))\n');
  files.set('scripts/build.sh', '#!/bin/sh\nbuild_all() {\n  echo building\n}\nbuild_all\n');
  files.set('native/sum.c', 'int native_sum(int a, int b) { return a + b; }\n\nint main(void) { return native_sum(1, 2); }\n');

  const spec: Spec = {
    inTree: { path: 'packages/p0/src/index.ts', needle: 'p1Helper(x)', expect: { path: 'packages/p1/src/index.ts', needle: 'export function p1Helper' } },
    dependency: { path: 'packages/p0/src/index.ts', needle: `${depFn(wsDep(0))}(x)`, module: depName(wsDep(0)) },
    oneFile: 'packages/p0/src/index.ts',
    ask: { symbol: 'monorepo_reckoner', expectPath: 'tools/py/reckon.py', server: 'pyright' },
  };
  return { files, spec };
}
