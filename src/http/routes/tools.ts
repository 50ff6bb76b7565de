// GET /v1/tools: the tool definitions an LLM agent is handed (src/http/tools.ts).
// Computed per request from health: while the jail is unproved the list is empty,
// because every query tool would be refused; an unavailable server is named in
// the descriptions.
import type { FastifyInstance } from 'fastify';
import { coverageOf, listTools } from '../tools.js';
import type { Deps } from '../deps.js';

export async function toolRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  const coverage = coverageOf(deps.table);
  const doc = {
    tags: ['queries'],
    summary: 'Tool definitions (name, description, JSON Schema of the input) for LLM agents.',
    answers: { '200': { description: 'The tools.', schema: 'ToolsAnswer' } },
  } as const;
  app.get('/v1/tools', { config: { access: { permission: 'query', org: 'none' } }, schema: doc }, async () => ({ tools: listTools(deps.health, coverage) }));
}
