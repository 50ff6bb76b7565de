// One fetch job's use of its org's package store (package-store.ts): npm tarballs
// laid into the job's npm cache before `npm ci` and taken back after the steps
// (npm-tarballs.ts), wheels and composer dists the same way (python-wheels.ts,
// composer-dists.ts), Go modules laid into the job's GOMODCACHE before `go mod
// download` and taken back once it is sealed (go-modules.ts), then every file of
// the output dirs the job wrote linked by content (file-dedupe.ts). A failure here
// never fails the fetch: what the store could not give is downloaded, what it could
// not take stays the root's own.
import type { Logger } from '../log.js';
import { dedupeFiles } from './file-dedupe.js';
import { seedGoModules, takeGoModules, type GoJobState } from './go-modules.js';
import { lockIntegrities, seedTarballs, takeTarballs, type NpmJobState } from './npm-tarballs.js';
import type { PackageStore } from './package-store.js';
import { lockSha256s, seedWheels, takeWheels, type WheelJobState } from './python-wheels.js';
import { lockedDists, seedDists, takeDists, type DistJobState, type LockJson } from './composer-dists.js';

export class JobPackages {
  private readonly npm: NpmJobState = { wanted: new Set(), seeded: new Map() };
  private readonly wheels: WheelJobState = { wanted: new Set() };
  private readonly dists: DistJobState = { wanted: new Set() };
  private readonly go: GoJobState = { wanted: new Map(), seeded: new Map() };
  constructor(
    private readonly store: PackageStore,
    readonly org: string,
    private readonly log: Logger,
  ) {}

  /** Before an npm step: the tarballs the tree's lockfile `lockFile` names that the store holds, linked into `cacheDir`. */
  seedNpm(lockFile: string, cacheDir: string): Promise<void> {
    return this.safely(async () => {
      await seedTarballs(this.store, this.org, await lockIntegrities(lockFile), cacheDir, this.npm);
    }, 'package store: tarballs not laid out; npm downloads them');
  }

  /** After the steps, before the npm cache is removed. */
  takeNpm(cacheDir: string, depsDir: string): Promise<void> {
    return this.safely(async () => {
      await takeTarballs(this.store, this.org, cacheDir, depsDir, this.npm);
    }, 'package store: tarballs not stored');
  }

  /** Before a pip step: the wheels the lock of tree dir `ws` names that the store holds, linked into `inDir` (read-only to the jail). */
  seedWheels(treeDir: string, ws: string, inDir: string): Promise<void> {
    return this.safely(async () => {
      await seedWheels(this.store, this.org, await lockSha256s(treeDir, ws), inDir, this.wheels);
    }, 'package store: wheels not laid out; pip downloads them');
  }

  /** After the steps, before the python tmp dir (`outDir`: what the driver downloaded) is removed. */
  takeWheels(outDir: string, depsDir: string): Promise<void> {
    return this.safely(async () => {
      await takeWheels(this.store, this.org, outDir, depsDir, this.wheels);
    }, 'package store: wheels not stored');
  }

  /** Before a composer step: the dists `lock` (the daemon's reading of the tree's) names that the store holds, linked into composer's cache. */
  seedDists(lock: LockJson, cacheDir: string): Promise<void> {
    return this.safely(async () => {
      await seedDists(this.store, this.org, lockedDists(lock), cacheDir, this.dists);
    }, 'package store: dists not laid out; composer downloads them');
  }

  /** After the steps, before composer's cache is removed. */
  takeDists(cacheDir: string, depsDir: string): Promise<void> {
    return this.safely(async () => {
      await takeDists(this.store, this.org, cacheDir, depsDir, this.dists);
    }, 'package store: dists not stored');
  }

  /** Before a Go step: the modules the tree's go.sum `goSum` names that the store holds, linked into the job's `modcache`. */
  seedGo(goSum: string, modcache: string): Promise<void> {
    return this.safely(async () => {
      await seedGoModules(this.store, this.org, goSum, modcache, this.go);
    }, 'package store: Go modules not laid out; go downloads them');
  }

  /** After the output dirs are sealed and within the byte bound, before `dedupe` (a taken file is then the store's, not `files`). */
  takeGo(modcache: string): Promise<void> {
    return this.safely(async () => {
      await takeGoModules(this.store, this.org, modcache, this.go);
    }, 'package store: Go modules not stored');
  }

  /** After the output dirs are sealed and within the byte bound. */
  dedupe(dirs: readonly string[]): Promise<void> {
    return this.safely(async () => {
      const n = await dedupeFiles(this.store, this.org, dirs);
      this.log.debug({ org: this.org, ...n }, 'package store: files linked');
    }, 'package store: files not linked');
  }

  /** A store failure never fails the fetch: it is logged, and the tool downloads (or the root keeps its copy). */
  private async safely(fn: () => Promise<void>, failed: string): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.log.warn({ err, org: this.org }, failed);
    }
  }
}
