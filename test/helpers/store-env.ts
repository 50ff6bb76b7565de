// What a package store test needs (test/fetch-store*.test.ts): a data dir jail uids
// can traverse, the real PackageStore and RootStore over it, the real jail with its
// canary run, and a FetchManager that uses them. The store runs only when lspd runs
// as root, so elsewhere `skip` says why (host.ts decides whether that fails).
import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { FetchManager } from '../../src/fetch/fetch-manager.js';
import { PackageStore } from '../../src/fetch/package-store.js';
import { detectToolchains } from '../../src/fetch/toolchains.js';
import type { Toolchains } from '../../src/fetch/types.js';
import { createJail, type JailRuntime } from '../../src/jail/jail.js';
import { createLogger } from '../../src/log.js';
import { createMetrics, type Metrics } from '../../src/metrics.js';
import { RootStore } from '../../src/store/store.js';
import { projectDir, tempDir } from './daemon.js';
import { skipOrFail } from './host.js';

export interface StoreEnv {
  dataDir: string;
  metrics: Metrics;
  packages: PackageStore;
  store: RootStore;
  jail: JailRuntime;
  fetcher: FetchManager;
  /** Why the tests cannot run here, or undefined. */
  skip?: string;
  close(): Promise<void>;
}

/** `settings`: LSPD_* beside the data dir; `lacks`: what of the toolchains the tests need is missing, or undefined. */
export async function storeEnv(settings: Record<string, string>, lacks: (t: Toolchains) => string | undefined): Promise<StoreEnv> {
  const dataDir = tempDir('lspd-fetch-store-');
  chmodSync(dataDir, 0o755); // jails run as pool uids and must traverse it
  const config = loadConfig({ LSPD_DATA: dataDir, LOG_LEVEL: 'silent', ...settings }, projectDir);
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
  return env;
}

/** A counter's or gauge's value for the series with `labels` (0 when there is none). */
export async function metricValue(
  m: { get(): Promise<{ values: { labels: Record<string, unknown>; value: number }[] }> },
  labels: Record<string, string>,
): Promise<number> {
  return (await m.get()).values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value ?? 0;
}
