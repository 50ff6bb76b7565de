// Every language server lspd ships answers `initialize` inside the real SERVE jail
// (no network namespace but lo, socket() refused, read-only binds only): proof that
// the policy binds what they need (the project's node_modules at JAIL_NODE_MODULES,
// /usr with node, go, gopls and clangd, /proc, ld.so.cache) and nothing they lack
// makes them fail. Session behaviour is tested by src/lsp; this is only the jail.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { cannotJail, makeTree, startJail, jailDir, type TestJail } from './helpers/jail.js';
import type { JailedProcess } from '../src/jail/types.js';
import { CLANGD } from '../src/lsp/servers/rows/c.js';
import { JAIL_NODE_MODULES, TREE_AT } from '../src/jail/layout.js';

const skip = cannotJail();
const NODE = '/usr/bin/node';
const nm = (p: string) => `${JAIL_NODE_MODULES}/${p}`;

const SERVERS: Record<string, { argv: string[]; initializationOptions?: unknown }> = {
  'typescript-native': { argv: [nm('@typescript/typescript-linux-x64/lib/tsc'), '--lsp', '--stdio'] },
  'typescript-language-server': {
    argv: [NODE, nm('typescript-language-server/lib/cli.mjs'), '--stdio'],
    initializationOptions: { tsserver: { path: nm('typescript/lib/tsserver.js') } },
  },
  pyright: { argv: [NODE, nm('pyright/langserver.index.js'), '--stdio'] },
  intelephense: { argv: [NODE, nm('intelephense/lib/intelephense.js'), '--stdio'] },
  'bash-language-server': { argv: [NODE, nm('bash-language-server/out/cli.js'), 'start'] },
  gopls: { argv: ['/usr/bin/gopls'] },
  clangd: { argv: [CLANGD] },
};

function frame(msg: unknown): string {
  const body = JSON.stringify(msg);
  return `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** Resolve with the response to request `id`, answering server→client requests with null. */
function awaitResponse(j: JailedProcess, id: number, timeoutMs: number): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const timer = setTimeout(() => reject(new Error(`no response to ${id}; stderr: ${j.stderrTail().slice(-800)}`)), timeoutMs);
    void j.exited.then((e) => {
      clearTimeout(timer);
      reject(new Error(`server exited ${e.code ?? e.signal}; stderr: ${j.stderrTail().slice(-800)}`));
    });
    j.stdout.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const sep = buf.indexOf('\r\n\r\n');
        if (sep < 0) return;
        const len = Number(/Content-Length: (\d+)/i.exec(buf.subarray(0, sep).toString())?.[1]);
        if (buf.length < sep + 4 + len) return;
        const msg = JSON.parse(buf.subarray(sep + 4, sep + 4 + len).toString()) as Record<string, unknown>;
        buf = buf.subarray(sep + 4 + len);
        if (msg.id === id && !('method' in msg)) {
          clearTimeout(timer);
          resolve(msg);
        } else if ('method' in msg && 'id' in msg) {
          j.stdin.write(frame({ jsonrpc: '2.0', id: msg.id, result: null }));
        }
      }
    });
  });
}

describe('language servers in the SERVE jail', { skip }, () => {
  let t: TestJail;
  let tree: string;
  before(async () => {
    t = await startJail();
    tree = jailDir('lspd-servers-tree-');
    cpSync(join(import.meta.dirname, 'fixtures', 'jail', 'servers-tree'), tree, { recursive: true });
    makeTree({}, tree);
  });
  after(async () => t?.close());

  for (const [name, s] of Object.entries(SERVERS)) {
    test(`${name} answers initialize`, { timeout: 60_000 }, async () => {
      const j = await t.jail.spawn({ phase: 'serve', argv: s.argv, tree: { hostDir: tree, at: TREE_AT } });
      try {
        j.stdin.on('error', () => {});
        const reply = awaitResponse(j, 1, 45_000);
        j.stdin.write(
          frame({
            jsonrpc: '2.0',
            id: 1,
            method: 'initialize',
            params: {
              processId: null,
              rootUri: `file://${TREE_AT}`,
              workspaceFolders: [{ uri: `file://${TREE_AT}`, name: 'src' }],
              capabilities: {},
              ...(s.initializationOptions ? { initializationOptions: s.initializationOptions } : {}),
            },
          }),
        );
        const msg = await reply;
        assert.ok(msg.result && typeof msg.result === 'object' && 'capabilities' in msg.result, JSON.stringify(msg).slice(0, 300));
      } finally {
        j.kill();
        await j.exited;
      }
    });
  }
});
