// What a FETCH test needs around a FetchManager: a data dir, a config built from
// explicit settings (never the test runner's environment), the real jail with its
// canary run, and a root store reduced to the FetchStore slice (tree and deps dirs
// under the data dir, removal listeners). The jail is never mocked: when the host
// cannot confine, `skipReason` says why and the tests skip saying so.
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type Config } from '../../src/config.js';
import { FetchManager, type FetchManagerOptions } from '../../src/fetch/fetch-manager.js';
import { detectToolchains } from '../../src/fetch/toolchains.js';
import type { FetchStore, FetchView, Toolchains } from '../../src/fetch/types.js';
import { createJail, type JailRuntime } from '../../src/jail/jail.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { rootId, type RootKey } from '../../src/store/types.js';
import { projectDir, tempDir } from './daemon.js';
import { skipOrFail } from './host.js';

export const fixtures = join(projectDir, 'test', 'fixtures');

export class TestStore implements FetchStore {
  private readonly listeners: ((key: RootKey) => void | Promise<void>)[] = [];
  constructor(readonly dataDir: string) {}
  private dir(key: RootKey): string {
    return join(this.dataDir, 'roots', rootId(key));
  }
  treeDir(key: RootKey): string {
    return join(this.dir(key), 'tree');
  }
  depsDir(key: RootKey): string {
    return join(this.dir(key), 'deps');
  }
  onRemove(listener: (key: RootKey) => void | Promise<void>): void {
    this.listeners.push(listener);
  }
  /** Store a fixture (or any dir) as a root's tree, with its empty deps dir; parents traversable by jail uids. */
  put(key: RootKey, fromDir: string): void {
    cpSync(fromDir, this.treeDir(key), { recursive: true });
    chmodSync(this.treeDir(key), 0o755); // the store's writer does the same (tree-writer.ts fixModes)
    mkdirSync(this.depsDir(key), { recursive: true });
    let d = this.dir(key);
    while (d.startsWith(this.dataDir)) {
      chmodSync(d, 0o755);
      d = join(d, '..');
    }
  }
  /** Like RootStore.delete: listeners are awaited before the files go. */
  async remove(key: RootKey): Promise<void> {
    for (const l of this.listeners) await l(key);
    rmSync(this.dir(key), { recursive: true, force: true, maxRetries: 5 });
  }
}

export interface FetchEnv {
  config: Config;
  jail: JailRuntime;
  store: TestStore;
  tools: Toolchains;
  dataDir: string;
  /** Why the tests cannot run here, or undefined. */
  skipReason?: string;
  manager(opts?: Partial<FetchManagerOptions>): FetchManager;
  close(): Promise<void>;
}

const scratch: string[] = [];
process.on('exit', () => scratch.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A temp dir traversable by jail uids (0755), removed when the test process exits. */
export function scratchDir(prefix: string): string {
  const d = tempDir(prefix);
  chmodSync(d, 0o755);
  scratch.push(d);
  return d;
}

/** Every file under `dir` (relative paths), to prove what a fetch did not leave behind. */
export function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => statSync(join(dir, f)).isFile());
}

let n = 0;
/** A key with a fresh sha per call. */
export function newKey(repo = 'fixture'): RootKey {
  return { org: 'acme', repo, sha: (++n).toString(16).padStart(40, '0') };
}

/**
 * Store `dir` as a new root (named `repo`), queue its fetch on a new manager and
 * wait until it settles: the manager, the key, what the queueing answered and the
 * settled view.
 */
export async function fetchTree(env: FetchEnv, repo: string, dir: string): Promise<{ m: FetchManager; key: RootKey; queued: FetchView; view: FetchView }> {
  const m = env.manager();
  const key = newKey(repo);
  env.store.put(key, dir);
  const queued = await m.enqueue(key);
  const view = await m.wait(key);
  return { m, key, queued, view };
}

export async function fetchEnv(settings: Record<string, string>): Promise<FetchEnv> {
  const dataDir = tempDir('lspd-fetch-');
  // Jails run as pool uids and resolve bound paths as such: the data dir must be traversable.
  chmodSync(dataDir, 0o755);
  const config = loadConfig({ LSPD_DATA: dataDir, LOG_LEVEL: 'silent', ...settings }, projectDir);
  const log = createLogger('silent');
  const jail = await createJail({ config, log });
  const verdicts = await jail.canary();
  const tools = await detectToolchains(config.debian13Root);
  const store = new TestStore(dataDir);
  const managers: FetchManager[] = [];
  return {
    config,
    jail,
    store,
    tools,
    dataDir,
    ...(verdicts.fetch.ok ? {} : { skipReason: skipOrFail(`the FETCH jail is not available here: ${verdicts.fetch.reason}`)! }),
    manager(opts = {}) {
      const m = new FetchManager({ config, log, metrics: createMetrics(), jail, store, tools, byteCheckIntervalMs: 100, ...opts });
      managers.push(m);
      return m;
    },
    async close() {
      for (const m of managers) await m.close();
      await jail.close();
      rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 });
    },
  };
}
