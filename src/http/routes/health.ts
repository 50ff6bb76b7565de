// Probes and metrics: /livez (the process runs), /readyz (the jail canary proved
// both phases and the store is writable), /metrics (Prometheus text). None needs auth.
import type { FastifyInstance } from 'fastify';
import type { PhaseVerdict, ServerAvailability } from '../../health.js';
import { ownTextScrubber } from '../../lsp/answer/own-text.js';
import type { Deps } from '../deps.js';
import { operationsRoute } from '../route-options.js';

export async function healthRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  // Reasons quote the host (a bwrap path, an errno naming a file under the data dir), and
  // /readyz needs no token: they are scrubbed as answers are; the log keeps them whole.
  const scrub = ownTextScrubber(deps.config.dataDir);

  app.get('/livez', operationsRoute('Liveness: 200 while the process runs.', { '200': { description: 'Alive.' } }), async () => ({ live: true }));

  app.get(
    '/readyz',
    operationsRoute('Readiness: 200 only when the boot canary proved both jail phases and the store is writable.', {
      '200': { description: 'Ready.', schema: 'ReadyAnswer' },
      '503': { description: 'Not ready; `reason` says why.', schema: 'ReadyAnswer' },
    }),
    async (_req, reply) => {
      const h = deps.health;
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
    },
  );

  app.get(
    '/metrics',
    operationsRoute('Prometheus metrics (text exposition format).', { '200': { description: 'Metrics.', contentType: 'text/plain' } }),
    async (_req, reply) => {
      const text = await deps.metrics.registry.metrics();
      return reply.type(deps.metrics.registry.contentType).send(text);
    },
  );
}
