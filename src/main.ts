// lspd's entry point: config → log → metrics → store → jail → pool → http, then
// signals and shutdown. The only process.exit in lspd lives here.
import { ConfigError, isLoopback, loadConfigWithSource, type Config } from './config.js';
import { createLogger, type Logger } from './log.js';
import { createMetrics } from './metrics.js';
import { Health } from './health.js';
import { RootStore } from './store/store.js';
import { buildServer } from './http/server.js';
import { createJail } from './jail/jail.js';
import { jailVisiblePath } from './jail/private-paths.js';
import { TokenSet } from './tokens.js';
import { createLsp } from './lsp/create-lsp.js';
import { FetchManager } from './fetch/fetch-manager.js';
import { detectToolchains } from './fetch/toolchains.js';
import type { RootKey } from './store/types.js';

async function main(): Promise<void> {
  let config: Config;
  let configFile: string | undefined;
  try {
    ({ config, file: configFile } = loadConfigWithSource());
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`lspd: bad configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  // Every org's trees, the tokens and the configuration stay out of every jail's sight.
  const visible = jailVisiblePath(config.dataDir, [
    { name: 'LSPD_DATA', path: config.dataDir },
    ...(config.tokensFile ? [{ name: 'LSPD_TOKENS', path: config.tokensFile }] : []),
    ...(configFile ? [{ name: 'LSPD_CONFIG', path: configFile }] : []),
  ]);
  if (visible) {
    process.stderr.write(`lspd: bad configuration: ${visible}\n`);
    process.exit(2);
  }
  const log = createLogger(config.logLevel);
  if (!config.tokensFile && !isLoopback(config.listen)) {
    log.fatal({ listen: config.listen }, 'refusing to listen off loopback without LSPD_TOKENS');
    process.exit(2);
  }

  // A tokens file that cannot be read or parsed at start refuses to start: serving
  // with no tokens, or yesterday's, is not a choice to make silently.
  let tokens: TokenSet | undefined;
  if (config.tokensFile) {
    try {
      tokens = TokenSet.load(config.tokensFile);
    } catch (err) {
      log.fatal({ reason: (err as Error).message }, 'bad tokens file (LSPD_TOKENS)');
      process.exit(2);
    }
    const t = tokens;
    log.info({ tokens: t.size }, 'tokens loaded');
    // SIGHUP re-reads it; a bad file keeps the tokens in force (TokenSet.reload logs why).
    process.on('SIGHUP', () => t.reload(log.child({ mod: 'auth' })));
  }

  const metrics = createMetrics(config);
  const health = new Health();
  const store = await RootStore.open({ config, log: log.child({ mod: 'store' }), metrics });
  health.store = await store.checkWritable();

  // The jail: both seccomp filters, cgroups, the FETCH egress proxy, then the boot
  // canary in each phase. Until a phase is proved, /readyz is 503 and jail.spawn
  // itself refuses that phase (not_ready); nothing turns this off.
  const jail = await createJail({ config, log: log.child({ mod: 'jail' }), metrics });
  health.jail = await jail.canary();

  // Language servers: the closed table (availability into /readyz), the session
  // pool and the query service; sessions spawn lazily, only in the proved SERVE jail.
  // The FETCH phase: one background job per root, in the FETCH jail; jobs wait
  // (queued) until that phase is proved. Roots stored before this start whose fetch
  // was interrupted (or never queued) are resumed.
  const fetcher = new FetchManager({ config, log: log.child({ mod: 'fetch' }), metrics, jail, store, tools: await detectToolchains(), ready: () => health.jail.fetch.ok });
  fetcher.onDone((key) => void store.refreshUsage(key).catch((err: unknown) => log.warn({ err }, 'cannot measure a root after its fetch')));
  void fetcher.resume(allRootKeys(store)).catch((err: unknown) => log.error({ err }, 'fetch resume failed'));

  const lsp = await createLsp({ config, log, metrics, health, jail, store, fetcher });

  const app = await buildServer({ config, log, metrics, health, store, jail, lsp: lsp.service, pool: lsp.pool, table: lsp.table, fetcher, ...(tokens ? { tokens } : {}) });
  const [host, port] = splitListen(config.listen);
  const address = await app.listen({ host, port });
  log.info({ address, ready: health.ready, reason: health.reason }, 'listening');

  installShutdown(log, config, async () => {
    await app.close();
    await fetcher.close(); // running fetches are killed and written back as queued: the next start resumes them
    await lsp.close(); // shutdown/exit each server (bounded) before the jail kills what is left
    await jail.close();
    await store.close();
  });
}

/** Every stored root's key, page by page. */
function* allRootKeys(store: RootStore): Generator<RootKey> {
  let after: string | undefined;
  do {
    const page = store.list({ limit: 1000, ...(after ? { after } : {}) });
    for (const info of page.roots) yield info.root;
    after = page.next;
  } while (after);
}

function splitListen(listen: string): [string, number] {
  const i = listen.lastIndexOf(':');
  return [listen.slice(0, i).replace(/^\[|\]$/g, ''), Number(listen.slice(i + 1))];
}

/** SIGTERM/SIGINT: stop accepting, drain in-flight requests, stop servers, exit 0. A second signal exits at once. */
function installShutdown(log: Logger, config: Config, close: () => Promise<void>): void {
  let closing = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (closing) {
      log.warn({ signal }, 'second signal, exiting now');
      process.exit(1);
    }
    closing = true;
    log.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      log.error({ graceMs: config.shutdownGraceMs }, 'shutdown grace passed, exiting');
      process.exit(1);
    }, config.shutdownGraceMs + config.shutdownTimeoutMs);
    force.unref();
    close().then(
      () => {
        log.info('stopped');
        process.exit(0);
      },
      (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}

main().catch((err: unknown) => {
  process.stderr.write(`lspd: failed to start: ${(err as Error)?.message ?? String(err)}\n`);
  process.exit(1);
});
