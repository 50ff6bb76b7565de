// The benches' HTTP client: node:http over one kept-alive connection, as a service
// wired to lspd would ask. fetch() (undici's WHATWG layer) costs about 1 ms more per
// request on this host; a bench measuring what lspd adds should not count it.
import { Agent, request } from 'node:http';

export const agent = new Agent({ keepAlive: true, maxSockets: 1 });

/** POST /v1/code/lsp over the kept-alive connection; resolves with status and body. */
export function postLsp(url: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}/v1/code/lsp`,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown> }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}
