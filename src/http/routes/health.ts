// Probes and metrics: /livez (the process runs), /readyz (the jail canary proved
// both phases and the store is writable), /metrics (Prometheus text). None needs auth.
import type { FastifyInstance } from 'fastify';
import type { PhaseVerdict, ServerAvailability } from '../../health.js';
import { ownTextScrubber } from '../../lsp/answer/own-text.js';
import { perServer, type Deps } from '../deps.js';

/**
 * Reasons quote the host (a bwrap path, an errno naming a file under the data dir), and
 * /readyz needs no token: they are scrubbed as answers are; the log keeps them whole.
 */
const scrubberOf = perServer((deps) => ownTextScrubber(deps.config.dataDir));

export async function healthRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  app.get('/livez', async () => ({ live: true }));

  app.get('/readyz', async (_req, reply) => {
    const h = deps.health;
    const scrub = scrubberOf(deps);
    const verdict = (v: PhaseVerdict): PhaseVerdict => (v.ok ? v : { ok: false, reason: scrub(v.reason) });
    const server = (a: ServerAvailability): ServerAvailability => (a.reason === undefined ? a : { ...a, reason: scrub(a.reason) });
    const body = {
      ready: h.ready,
      ...(h.ready ? {} : { reason: scrub(h.reason ?? '') }),
      jail: { serve: verdict(h.jail.serve), fetch: verdict(h.jail.fetch) },
      store: verdict(h.store),
      servers: Object.fromEntries(Object.entries(h.servers).map(([name, a]) => [name, server(a)])),
    };
    return reply.code(h.ready ? 200 : 503).send(body);
  });

  app.get('/metrics', async (_req, reply) => {
    const text = await deps.metrics.registry.metrics();
    return reply.type(deps.metrics.registry.contentType).send(text);
  });
}
