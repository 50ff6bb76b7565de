// GET /docs/json (the OpenAPI 3.1 document) and GET /docs (the same, rendered as
// one self-contained HTML page: no script, no CDN, no fonts to fetch, because the
// machines lspd runs on usually have no internet). Both are public: see PUBLIC in
// ../auth.ts for why.
//
// installDocs must run before the other routes are registered: it collects them
// with an onRoute hook, each with the access rule and the doc it declares in its
// options (../route-options.ts), so the document lists exactly what the server serves.
import type { FastifyInstance } from 'fastify';
import { buildOpenApi, type CollectedRoute } from '../openapi.js';
import { operationsRoute, type RouteDoc } from '../route-options.js';

export function installDocs(app: FastifyInstance): void {
  const routes: CollectedRoute[] = [];
  app.addHook('onRoute', (r) => {
    const access = r.config?.access;
    const doc = r.schema?.answers ? (r.schema as RouteDoc) : undefined;
    for (const method of Array.isArray(r.method) ? r.method : [r.method]) {
      routes.push({ method, url: r.url, ...(access ? { access } : {}), ...(doc ? { doc } : {}) });
    }
  });

  // Built on first use: by then every route is registered; the document never
  // changes while the process runs.
  let doc: Record<string, unknown> | undefined;
  let page: string | undefined;
  const document = () => (doc ??= buildOpenApi(routes));

  app.get(
    '/docs/json',
    operationsRoute('This document (OpenAPI 3.1, JSON).', { '200': { description: 'OpenAPI document.', contentType: 'application/json' } }),
    async (_req, reply) => reply.type('application/json').send(document()),
  );

  const html = operationsRoute('This document, rendered as HTML.', { '200': { description: 'HTML.', contentType: 'text/html' } });
  app.get('/docs', html, async (_req, reply) => {
    page ??= renderHtml(document());
    return (
      reply
        .type('text/html; charset=utf-8')
        // Nothing on the page loads or runs anything: say so to the browser too.
        .header('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'")
        .send(page)
    );
  });
}

const esc = (s: unknown): string => String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

interface Op {
  summary?: string;
  description?: string;
  parameters?: { name: string; in: string; required?: boolean; description?: string }[];
  requestBody?: { content: Record<string, { schema?: { $ref?: string; oneOf?: { $ref: string }[] } }> };
  responses?: Record<string, { description: string; content?: Record<string, { schema?: { $ref?: string } }> }>;
  security?: unknown[];
  'x-lspd-permission'?: string;
}

function refLink(schema: { $ref?: string; oneOf?: { $ref: string }[] } | undefined): string {
  if (!schema) return '';
  const refs = schema.oneOf ? schema.oneOf.map((s) => s.$ref) : schema.$ref ? [schema.$ref] : [];
  return refs
    .map((r) => r.split('/').pop()!)
    .map((n) => `<a href="#schema-${esc(n)}">${esc(n)}</a>`)
    .join(' or ');
}

function renderOp(path: string, method: string, op: Op): string {
  const auth = op.security && op.security.length === 0 ? 'no token' : `token with <code>${esc(op['x-lspd-permission'] ?? 'any')}</code>`;
  const params = (op.parameters ?? [])
    .map((p) => `<li><code>${esc(p.name)}</code> (${esc(p.in)}${p.required ? ', required' : ''}) ${esc(p.description ?? '')}</li>`)
    .join('');
  const body = op.requestBody
    ? Object.entries(op.requestBody.content)
        .map(([type, c]) => `<li><code>${esc(type)}</code> ${refLink(c.schema)}</li>`)
        .join('')
    : '';
  const answers = Object.entries(op.responses ?? {})
    .map(([status, a]) => {
      const schema = a.content ? Object.values(a.content)[0]?.schema : undefined;
      return `<tr><td>${esc(status)}</td><td>${esc(a.description)}</td><td>${refLink(schema)}</td></tr>`;
    })
    .join('');
  return `<section class="op" id="${esc(method + path)}">
<h3><span class="m ${esc(method)}">${esc(method.toUpperCase())}</span> <code>${esc(path)}</code></h3>
<p>${esc(op.summary ?? '')}</p>${op.description ? `<p>${esc(op.description)}</p>` : ''}
<p class="auth">Auth: ${auth}</p>
${params ? `<h4>Parameters</h4><ul>${params}</ul>` : ''}${body ? `<h4>Body</h4><ul>${body}</ul>` : ''}
<h4>Answers</h4><table><tr><th>status</th><th>meaning</th><th>body</th></tr>${answers}</table>
</section>`;
}

export function renderHtml(doc: Record<string, unknown>): string {
  const info = doc.info as { title: string; version: string; description: string };
  const paths = doc.paths as Record<string, Record<string, Op>>;
  const schemas = (doc.components as { schemas: Record<string, unknown> }).schemas;
  const index = Object.entries(paths)
    .flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `<li><a href="#${esc(m + path)}"><span class="m ${esc(m)}">${esc(m.toUpperCase())}</span> ${esc(path)}</a></li>`),
    )
    .join('');
  const ops = Object.entries(paths)
    .flatMap(([path, o]) => Object.entries(o).map(([m, op]) => renderOp(path, m, op)))
    .join('\n');
  const schemaHtml = Object.entries(schemas)
    .map(([name, s]) => `<section id="schema-${esc(name)}"><h3>${esc(name)}</h3><pre>${esc(JSON.stringify(s, null, 2))}</pre></section>`)
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(info.title)} ${esc(info.version)} API</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
code,pre{font-family:ui-monospace,monospace;font-size:13px}pre{background:#f6f6f6;padding:.75rem;overflow:auto}
.op{border-top:1px solid #ddd;padding-top:.5rem}.m{display:inline-block;min-width:4.5em;font-weight:600}
.get{color:#0a6}.post{color:#06c}.put{color:#a60}.delete{color:#c22}.auth{color:#666}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;vertical-align:top}
ul.index{columns:2;list-style:none;padding:0}
</style></head><body>
<h1>${esc(info.title)} <small>${esc(info.version)}</small></h1>
<p>${esc(info.description)} The machine-readable document is at <a href="docs/json"><code>/docs/json</code></a> (OpenAPI 3.1).</p>
<p>Send <code>Authorization: Bearer &lt;token&gt;</code> when the daemon has tokens configured. Errors are <code>{"error": code, "message": sentence}</code>.</p>
<h2>Routes</h2><ul class="index">${index}</ul>
${ops}
<h2>Schemas</h2>
${schemaHtml}
</body></html>
`;
}
