// lspd's entry point: configuration (and its refusals), the tokens file and SIGHUP,
// then the daemon (src/daemon.ts wires it), then signals and shutdown. The only
// process.exit in lspd lives here.
import { ConfigError, isLoopback, loadConfigWithSource, type Config } from './config.js';
import { createLogger, type Logger } from './log.js';
import { jailVisiblePath } from './jail/private-paths.js';
import { TokenSet } from './tokens.js';
import { startDaemon } from './daemon.js';

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
  const visible = jailVisiblePath(
    config.dataDir,
    [
      { name: 'LSPD_DATA', path: config.dataDir },
      ...(config.tokensFile ? [{ name: 'LSPD_TOKENS', path: config.tokensFile }] : []),
      ...(configFile ? [{ name: 'LSPD_CONFIG', path: configFile }] : []),
    ],
    [config.debian13Root],
  );
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

  const daemon = await startDaemon(config, log, tokens ? { tokens } : {});
  log.info({ address: daemon.address, ready: daemon.health.ready, reason: daemon.health.reason }, 'listening');
  installShutdown(log, config, daemon.close);
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
