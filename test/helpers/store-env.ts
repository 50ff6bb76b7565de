// What a package store test needs (test/fetch-store*.test.ts: npm, Go, wheels and
// composer dists): a data dir jail uids can traverse, the real PackageStore and
// RootStore over it, the real jail with its canary run, a FetchManager that uses
// them, and a fetch of one tree that must end done. The store runs only when lspd
// runs as root, so elsewhere `skip` says why (host.ts decides whether that fails).
import assert from 'node:assert/strict';
import { chmodSync, closeSync, mkdirSync, openSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { loadConfig } from '../../src/config.js';
import { FetchManager } from '../../src/fetch/fetch-manager.js';
import { PackageStore } from '../../src/fetch/package-store.js';
import { detectToolchains } from '../../src/fetch/toolchains.js';
import type { FetchView, Toolchains } from '../../src/fetch/types.js';
import { createJail, type JailRuntime } from '../../src/jail/jail.js';
import { createLogger } from '../../src/log.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { RootStore } from '../../src/store/store.js';
import type { RootKey } from '../../src/store/types.js';
import { packTar, type PackEntry } from '../store-helpers.js';
import { projectDir, tempDir } from './daemon.js';
import { skipOrFail } from './host.js';
import { jailUidEnv } from './uids.js';

export interface StoreEnv {
  dataDir: string;
  metrics: Metrics;
  packages: PackageStore;
  store: RootStore;
  jail: JailRuntime;
  fetcher: FetchManager;
  /** Why the tests cannot run here, or undefined. */
  skip?: string;
  /** Store `files` as root `k`, fetch it, and return its view (asserted done). */
  fetchRoot(k: RootKey, files: PackEntry[]): Promise<FetchView>;
  close(): Promise<void>;
}

/** `settings`: LSPD_* beside the data dir; `lacks`: what of the toolchains the tests need is missing, or undefined. */
export async function storeEnv(prefix: string, settings: Record<string, string>, lacks: (t: Toolchains) => string | undefined): Promise<StoreEnv> {
  const dataDir = tempDir(prefix);
  chmodSync(dataDir, 0o755); // jails run as pool uids and must traverse it
  const config = loadConfig({ LSPD_DATA: dataDir, LOG_LEVEL: 'silent', ...settings, ...jailUidEnv(64) }, projectDir);
  const log = createLogger('silent');
  const metrics = createMetrics();
  const env = { dataDir, metrics } as StoreEnv;
  env.close = async () => {
    await env.fetcher?.close();
    await env.store?.close();
    await env.jail?.close();
  };
  if (process.getuid?.() !== 0) {
    env.skip = skipOrFail('the package store runs only when lspd runs as root (jails then run as other uids)');
    return env;
  }
  mkdirSync(dataDir, { recursive: true });
  env.packages = await PackageStore.open({ dir: join(dataDir, 'fetch-store'), log, metrics });
  env.store = await RootStore.open({ config, log, metrics, packages: env.packages });
  env.jail = await createJail({ config, log });
  const verdicts = await env.jail.canary();
  const tools = await detectToolchains();
  const missing = verdicts.fetch.ok ? lacks(tools) : `the FETCH jail is not available here: ${verdicts.fetch.reason}`;
  if (missing) env.skip = skipOrFail(missing);
  env.fetcher = new FetchManager({ config, log, metrics, jail: env.jail, store: env.store, tools, packages: env.packages });
  env.fetchRoot = async (k, files) => {
    await env.store.put(k, Readable.from([await packTar(files)]), { gzip: false });
    await env.fetcher.enqueue(k);
    const v = await env.fetcher.wait(k);
    await env.store.refreshUsage(k);
    assert.equal(v.state, 'done', v.log);
    return v;
  };
  return env;
}

/** Write `text` over a store entry's bytes at `at`, as a bad disk or a hand would (the same inode); its inode. */
export function tamper(path: string, text: string, at: number): number {
  const fd = openSync(path, 'r+');
  try {
    writeSync(fd, Buffer.from(text), 0, Buffer.byteLength(text), at);
  } finally {
    closeSync(fd);
  }
  return statSync(path).ino;
}

/** A counter's or gauge's value for the series with `labels` (0 when there is none). */
export async function metricValue(
  m: { get(): Promise<{ values: { labels: Record<string, unknown>; value: number }[] }> },
  labels: Record<string, string>,
): Promise<number> {
  return (await m.get()).values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value ?? 0;
}
