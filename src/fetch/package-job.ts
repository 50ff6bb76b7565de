// One fetch job's use of its org's package store (package-store.ts): npm tarballs
// laid into the job's npm cache before `npm ci` and taken back after the steps
// (npm-tarballs.ts), Go modules laid into the job's GOMODCACHE before `go mod
// download` and taken back once it is sealed (go-modules.ts), then every file of
// the output dirs the job wrote linked by content (file-dedupe.ts). A failure here
// never fails the fetch: what the store could not give is downloaded, what it could
// not take stays the root's own.
import type { Logger } from '../log.js';
import { dedupeFiles } from './file-dedupe.js';
import { seedGoModules, takeGoModules, type GoJobState } from './go-modules.js';
import { lockIntegrities, seedTarballs, takeTarballs, type NpmJobState } from './npm-tarballs.js';
import type { PackageStore } from './package-store.js';

export class JobPackages {
  private readonly npm: NpmJobState = { wanted: new Set(), seeded: new Map() };
  private readonly go: GoJobState = { wanted: new Map(), seeded: new Map() };
  constructor(
    private readonly store: PackageStore,
    readonly org: string,
    private readonly log: Logger,
  ) {}

  /** Before an npm step: the tarballs the tree's lockfile `lockFile` names that the store holds, linked into `cacheDir`. */
  async seedNpm(lockFile: string, cacheDir: string): Promise<void> {
    try {
      await seedTarballs(this.store, this.org, await lockIntegrities(lockFile), cacheDir, this.npm);
    } catch (err) {
      this.log.warn({ err, org: this.org }, 'package store: tarballs not laid out; npm downloads them');
    }
  }

  /** After the steps, before the npm cache is removed. */
  async takeNpm(cacheDir: string, depsDir: string): Promise<void> {
    try {
      await takeTarballs(this.store, this.org, cacheDir, depsDir, this.npm);
    } catch (err) {
      this.log.warn({ err, org: this.org }, 'package store: tarballs not stored');
    }
  }

  /** Before a Go step: the modules the tree's go.sum `goSum` names that the store holds, linked into the job's `modcache`. */
  async seedGo(goSum: string, modcache: string): Promise<void> {
    try {
      await seedGoModules(this.store, this.org, goSum, modcache, this.go);
    } catch (err) {
      this.log.warn({ err, org: this.org }, 'package store: Go modules not laid out; go downloads them');
    }
  }

  /** After the output dirs are sealed and within the byte bound, before `dedupe` (a taken file is then the store's, not `files`). */
  async takeGo(modcache: string): Promise<void> {
    try {
      await takeGoModules(this.store, this.org, modcache, this.go);
    } catch (err) {
      this.log.warn({ err, org: this.org }, 'package store: Go modules not stored');
    }
  }

  /** After the output dirs are sealed and within the byte bound. */
  async dedupe(dirs: readonly string[]): Promise<void> {
    try {
      const n = await dedupeFiles(this.store, this.org, dirs);
      this.log.debug({ org: this.org, ...n }, 'package store: files linked');
    } catch (err) {
      this.log.warn({ err, org: this.org }, 'package store: files not linked');
    }
  }
}
