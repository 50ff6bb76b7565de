// The benches' HTTP client: node:http over one kept-alive connection, as a service
// wired to lspd would ask. fetch() (undici's WHATWG layer) costs about 1 ms more per
// request on this host; a bench measuring what lspd adds should not count it.
import { Agent, request } from 'node:http';

export const agent = new Agent({ keepAlive: true, maxSockets: 1 });

type Answer = { status: number; body: Record<string, unknown> };

/** POST /v1/code/lsp over the kept-alive connection; resolves with status and body. */
export function postLsp(url: string, body: unknown): Promise<Answer> {
  const data = JSON.stringify(body);
  return send(`${url}/v1/code/lsp`, 'POST', data);
}

/** GET a JSON route over the same connection (a client polling a root, as an agent's would). */
export function getJson(url: string, path: string): Promise<Answer> {
  return send(`${url}${path}`, 'GET');
}

function send(url: string, method: string, data?: string): Promise<Answer> {
  const headers: Record<string, string | number> = data === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) };
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown> }));
    });
    req.on('error', reject);
    req.end(data);
  });
}
