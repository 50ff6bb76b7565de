// Probes and metrics: /livez (the process runs), /readyz (the jail canary proved
// both phases and the store is writable), /metrics (Prometheus text). None needs auth.
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.js';

export async function healthRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.get('/livez', async () => ({ live: true }));

  app.get('/readyz', async (_req, reply) => {
    const h = deps.health;
    const body = {
      ready: h.ready,
      ...(h.ready ? {} : { reason: h.reason }),
      jail: { serve: h.jail.serve, fetch: h.jail.fetch },
      store: h.store,
      servers: h.servers,
    };
    return reply.code(h.ready ? 200 : 503).send(body);
  });

  app.get('/metrics', async (_req, reply) => {
    const text = await deps.metrics.registry.metrics();
    return reply.type(deps.metrics.registry.contentType).send(text);
  });
}
