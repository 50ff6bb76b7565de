// /mcp: the tools of src/http/tools.ts over MCP's Streamable HTTP transport
// (https://modelcontextprotocol.io/specification/2025-06-18/basic/transports#streamable-http),
// so an agent can attach lspd directly. Each tool call runs the same service as
// the HTTP route it mirrors, so it answers alike, errors included.
//
// Stateless (no Mcp-Session-Id): every POST gets a fresh server and transport.
// The tools are plain request/answer and the root is an argument of every call,
// so a session would hold nothing worth keeping, while it would cost a session
// table to bound and reap, pin a client to one replica behind a load balancer,
// and be lost on every restart. GET (a server-initiated stream) and DELETE (end
// a session) have nothing to serve and answer 405, as the transport spec allows.
//
// Auth: the same bearer token as every route. The org is inside each call's
// arguments, not at the top of the body, so the route declares `org: 'none'` and
// every tool call checks its org with assertOrg before it runs; read_file also
// needs the `read` permission its route needs.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { assertOrg, assertPermission } from '../auth.js';
import { callTool, coverageOf, listTools, toolErrorBody, type ToolRunner } from '../tools.js';
import type { Deps } from '../deps.js';
import { clientSignal } from '../client-signal.js';

const INSTRUCTIONS =
  'lspd answers code-intelligence questions (definition, references, hover, symbols, diagnostics, and lookups by name) ' +
  'about source trees uploaded to it, using real language servers. Every tool names the tree by org, repo and commit sha. ' +
  'Start with lsp_locate when you know a name, or lsp_symbols to outline a file; read_file reads the lines of any location an answer gives.';

/**
 * tools/call with any params. The SDK parses a handler's schema before its own
 * tools/call check, so with CallToolRequestSchema here malformed params answered
 * -32603 "Internal error" and a raw zod dump; with this, its check runs and answers
 * -32602 "Invalid params", as JSON-RPC says.
 */
const AnyToolCall = z.object({ method: z.literal('tools/call'), params: z.unknown() });

function mcpServer(deps: Deps, runner: ToolRunner, hangup: AbortSignal): Server {
  const coverage = coverageOf(deps.table);
  const server = new Server({ name: 'lspd', version: '1' }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({
    tools: listTools(deps.health, coverage).map((t) => ({
      ...t,
      inputSchema: t.inputSchema as { type: 'object' },
      // Every tool reads an immutable tree: safe to retry, touches nothing outside lspd.
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
    })),
  }));
  server.setRequestHandler(AnyToolCall, async (raw, extra): Promise<CallToolResult> => {
    const req = CallToolRequestSchema.parse(raw); // the SDK's own check has passed: this only types it
    // Cancelled by the client (notifications/cancelled) or by the HTTP request going away.
    const signal = AbortSignal.any([extra.signal, hangup]);
    try {
      const answer = await callTool(req.params.name, req.params.arguments, runner, signal);
      // Exactly the JSON the HTTP route sends: answers may carry in-process extras (symbol-keyed
      // paging state) that JSON drops and MCP's result schema refuses.
      const text = JSON.stringify(answer);
      return { content: [{ type: 'text', text }], structuredContent: JSON.parse(text) as Record<string, unknown> };
    } catch (err) {
      const body = toolErrorBody(err);
      if (body.error === 'internal') deps.log.error({ err, tool: req.params.name }, 'mcp tool failed');
      return { isError: true, content: [{ type: 'text', text: JSON.stringify(body) }], structuredContent: body };
    }
  });
  return server;
}

/** The services the routes call, with this request's token checks. */
function runnerFor(deps: Deps, req: FastifyRequest): ToolRunner {
  return { ...deps.services, assertOrg: (org) => assertOrg(req, org), assertPermission: (p) => assertPermission(req, p) };
}

function methodNotAllowed(reply: FastifyReply) {
  return reply
    .code(405)
    .header('allow', 'POST')
    .send({ jsonrpc: '2.0', error: { code: -32000, message: 'This MCP endpoint is stateless: POST only.' }, id: null });
}

export async function mcpRoutes(app: FastifyInstance, deps: Deps): Promise<void> {
  // MCP carries the org inside each tool call's arguments, not at the top of the
  // body: each call checks its org itself (assertOrg), as /ask's batch does.
  const access = { config: { access: { permission: 'query', org: 'none' } } } as const;
  app.post('/mcp', access, async (req, reply) => {
    const hangup = clientSignal(reply);
    const server = mcpServer(deps, runnerFor(deps, req), hangup);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    // The transport writes the raw response itself; fastify must not answer too.
    reply.hijack();
    reply.raw.once('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
    } catch (err) {
      deps.log.error({ err }, 'mcp request failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json' });
        reply.raw.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error.' }, id: null }));
      }
    }
  });
  app.get('/mcp', access, async (_req, reply) => methodNotAllowed(reply));
  app.delete('/mcp', access, async (_req, reply) => methodNotAllowed(reply));
}
