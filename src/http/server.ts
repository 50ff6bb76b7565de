// buildServer(deps): the fastify instance with every route, the one error handler
// and the body parsers. It does not listen; main.ts (or a test) does. Each route
// declares its access rule and its doc in its own options (route-options.ts).
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Deps } from './deps.js';
import { installErrorHandler } from './error-handler.js';
import { installAuth } from './auth.js';
import { decorateRequests } from './route-options.js';
import { installDocs } from './routes/docs.js';
import { healthRoutes } from './routes/health.js';
import { rootRoutes } from './routes/roots.js';
import { fileRoutes } from './routes/files.js';
import { queryRoutes } from './routes/query.js';
import { askRoutes } from './routes/ask.js';
import { diffRoutes } from './routes/diff.js';
import { checkRoutes } from './routes/check.js';
import { toolRoutes } from './routes/tools.js';
import { mcpRoutes } from './routes/mcp.js';
import { UPLOAD_MEDIA } from './media-types.js';

export async function buildServer(deps: Deps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.log.child({ mod: 'http' }) as FastifyBaseLogger,
    bodyLimit: deps.config.jsonBodyLimitBytes,
    // Our routes log what matters (with the root and code); a line per request is noise.
    logController: new LogController({ disableRequestLogging: true }),
    // No child logger per request (a pino child and its bindings on every query): the
    // one line that wants the request says its id itself (error-handler.ts).
    childLoggerFactory: (logger) => logger,
    // Uploads are long; the per-route logic bounds them by size, not by a socket timeout.
    requestTimeout: 0,
    return503OnClosing: true,
  });
  decorateRequests(app);
  installErrorHandler(app);
  // Before any route: auth's onRoute check refuses a route with no access rule,
  // and docs collects every route for the OpenAPI document.
  installAuth(app, deps.tokens, deps.log);
  installDocs(app);

  // Leave upload bodies unread: the store streams them straight from the socket.
  // A tree upload's body stays a stream for the route.
  app.addContentTypeParser([...UPLOAD_MEDIA], (_req, _payload, done) => done(null, undefined));

  // Labelled children made once per label set (routes, ops, servers, statuses: a few
  // hundred at most): observe() with a labels object hashes them on every request.
  const timers = new Map<string, { observe(v: number): void }>();
  app.addHook('onResponse', (req, reply, done) => {
    const route = req.routeOptions.url ?? 'unknown';
    const key = `${route} ${req.lspdOp} ${req.lspdServer} ${reply.statusCode}`;
    let timer = timers.get(key);
    if (!timer) {
      timer = deps.metrics.httpSeconds.labels({ route, op: req.lspdOp, server: req.lspdServer, status: String(reply.statusCode) });
      timers.set(key, timer);
    }
    timer.observe(reply.elapsedTime / 1000);
    done();
  });

  await healthRoutes(app, deps);
  await rootRoutes(app, deps);
  await fileRoutes(app, deps);
  await queryRoutes(app, deps);
  await askRoutes(app, deps);
  await diffRoutes(app, deps);
  await checkRoutes(app, deps);
  await toolRoutes(app, deps);
  await mcpRoutes(app, deps);
  return app;
}
