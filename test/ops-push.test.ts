// `lspd push` and friends, as CI runs them: a fresh `git init` repository with a
// commit, pushed to a real daemon through bin/lspd.js, and the root then answering.
// Also: idempotent re-push, --sha, org/repo from the origin remote, the daemon's
// error printed with a non-zero exit, retries on 5xx (against a local stub that
// fails twice) and on a refused connection, `lspd status`, and the 409 need_tree
// re-upload that scale-out relies on.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, join } from 'node:path';
import { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import { LspdClient } from '../src/client/index.js';
import { spawnDaemon, tempDir, type Daemon } from './helpers/daemon.js';
import { gitRepo, runCli, writeTokens, type TestToken } from './helpers/ops.js';

const ci: TestToken = { secret: 'lspd_ci-0123456789abcdefghijklmnopqrstu', name: 'ci', orgs: ['acme'], permissions: ['upload', 'read', 'query'] };
const ro: TestToken = { secret: 'lspd_ro-0123456789abcdefghijklmnopqrstu', name: 'ro', orgs: ['acme'], permissions: ['read'] };
const all: TestToken = { secret: 'lspd_all-0123456789abcdefghijklmnopqrst', name: 'all', orgs: '*', permissions: ['upload', 'read', 'query', 'delete'] };

const FILES = {
  'package.json': '{"name": "demo", "private": true}\n',
  'tsconfig.json': '{"compilerOptions": {"strict": true}}\n',
  'src/greet.ts': 'export function greet(name: string): string {\n  return `hello ${name}`;\n}\n',
  'src/app.ts': "import { greet } from './greet.js';\nconsole.log(greet('world'));\n",
};

async function tarEntries(body: Buffer, gzip: boolean): Promise<string[]> {
  const names: string[] = [];
  const ex = tar.extract();
  ex.on('entry', (h, stream, next) => {
    if (h.type === 'file') names.push(h.name);
    stream.resume();
    stream.on('end', next);
  });
  const src = Readable.from([body]);
  await new Promise<void>((res, rej) => {
    ex.on('finish', res).on('error', rej);
    (gzip ? src.pipe(createGunzip()) : src).on('error', rej).pipe(ex);
  });
  return names.sort();
}

describe('lspd push', () => {
  let d: Daemon;
  let repo: string;
  let sha: string;
  const cli = (args: string[], token = ci.secret, cwd = repo) => runCli([...args, '--url', d.url], { cwd, env: { LSPD_TOKEN: token } });

  before(async () => {
    const tokens = join(tempDir('lspd-tokens-'), 'tokens.json');
    writeTokens(tokens, [ci, ro, all]);
    d = await spawnDaemon({ env: { LSPD_TOKENS: tokens } });
    repo = tempDir('lspd-push-repo-');
    sha = gitRepo(repo, FILES);
  });
  after(async () => {
    await d?.stop();
    d?.cleanup();
  });

  it('streams HEAD of a fresh repository to the daemon, and the root then answers', async () => {
    const r = await cli(['push', '--org', 'acme']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`^stored acme/${basename(repo)}@${sha}: 4 files`));
    const c = new LspdClient({ url: d.url, token: ci.secret });
    try {
      const root = await c.getRoot({ org: 'acme', repo: basename(repo), sha });
      assert.equal(root.files, 4);
      assert.ok(root.languages.includes('typescript'), JSON.stringify(root.languages));
    } finally {
      await c.close();
    }
  });

  it('is idempotent, and pushes another commit with --sha', async () => {
    const again = await cli(['push', '--org', 'acme', '--json']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal((JSON.parse(again.stdout) as { created: boolean }).created, false);
    writeFileSync(join(repo, 'src', 'extra.ts'), 'export const extra = 1;\n');
    execFileSync('git', ['add', '-A'], { cwd: repo });
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.invalid', 'commit', '-q', '-m', 'two'], { cwd: repo });
    const head = await cli(['push', '--org', 'acme']);
    assert.equal(head.code, 0, head.stderr);
    assert.match(head.stdout, /^stored .*: 5 files/);
    const first = await cli(['push', '--org', 'acme', '--sha', sha.slice(0, 10)]);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, new RegExp(`^already stored acme/${basename(repo)}@${sha}`));
  });

  it('derives org and repo from the origin remote', async () => {
    execFileSync('git', ['remote', 'add', 'origin', 'git@git.example.invalid:globex/web-app.git'], { cwd: repo });
    try {
      const r = await cli(['push'], all.secret);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /^stored globex\/web-app@/);
    } finally {
      execFileSync('git', ['remote', 'remove', 'origin'], { cwd: repo });
    }
  });

  it("exits non-zero with the daemon's message when it refuses", async () => {
    const r = await cli(['push', '--org', 'acme', '--repo', 'other'], ro.secret);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /lspd: This token does not have the upload permission\. \(forbidden, HTTP 403\)/);
    const noToken = await cli(['push', '--org', 'acme', '--repo', 'other'], '');
    assert.equal(noToken.code, 1);
    assert.match(noToken.stderr, /\(unauthorized, HTTP 401\)/);
    const notGit = await cli(['push', '--org', 'acme'], ci.secret, tempDir());
    assert.equal(notGit.code, 2);
    assert.match(notGit.stderr, /not inside a git checkout/);
  });

  it('prints status: readiness, jail, and the roots', async () => {
    const r = await cli(['status'], all.secret);
    assert.ok(r.code === 0 || r.code === 1, r.stderr);
    assert.match(r.stdout, /^ready: (yes|no)/m);
    assert.match(r.stdout, /^jail: +serve/m);
    assert.match(r.stdout, new RegExp(`acme/${basename(repo)}@${sha.slice(0, 12)} +4 files`));
  });

  it('uploads the checkout and retries when a query meets 409 need_tree (--upload)', async () => {
    const fresh = tempDir('lspd-push-fresh-');
    const freshSha = gitRepo(fresh, { 'src/only.ts': 'export const only = 1;\n' });
    const args = ['lsp', 'documentSymbols', 'src/only.ts', '--org', 'acme'];
    const missing = await cli(args, ci.secret, fresh);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /need_tree, HTTP 409/);
    await cli([...args, '--upload'], ci.secret, fresh);
    const c = new LspdClient({ url: d.url, token: ci.secret });
    try {
      assert.equal((await c.getRoot({ org: 'acme', repo: basename(fresh), sha: freshSha })).files, 1);
    } finally {
      await c.close();
    }
  });
});

describe('lspd push retries', () => {
  it("retries 5xx with back-off, sending a complete gzip'd tar each time", async () => {
    const repo = tempDir('lspd-push-retry-');
    const sha = gitRepo(repo, FILES);
    const seen: { headers: IncomingMessage['headers']; body: Buffer }[] = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen.push({ headers: req.headers, body: Buffer.concat(chunks) });
        res.setHeader('content-type', 'application/json');
        if (seen.length <= 2) {
          res.statusCode = 503;
          res.setHeader('retry-after', '1');
          res.end(JSON.stringify({ error: 'busy', message: 'Too busy.', retry_after: 1 }));
          return;
        }
        res.statusCode = 201;
        res.end(JSON.stringify({ root: { org: 'acme', repo: 'r', sha }, created: true, files: 4, bytes: 10, languages: [], fetch: { state: 'none' } }));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const r = await runCli(['push', '--org', 'acme', '--repo', 'r', '--url', url, '--retries', '3'], { cwd: repo });
      assert.equal(r.code, 0, r.stderr);
      assert.equal(seen.length, 3);
      assert.equal((r.stderr.match(/retrying in/g) ?? []).length, 2);
      for (const s of seen) {
        assert.equal(s.headers['content-type'], 'application/gzip');
        assert.equal(s.headers['x-lspd-route-key'], 'acme/r');
        assert.deepEqual(await tarEntries(s.body, true), Object.keys(FILES).sort());
      }
    } finally {
      server.close();
    }
  });

  it('gives up after --retries on a refused connection, saying so', async () => {
    const repo = tempDir('lspd-push-refused-');
    gitRepo(repo, { 'a.txt': 'a\n' });
    // Port 9 (discard) on loopback: nothing listens there on a test host.
    const r = await runCli(['push', '--org', 'acme', '--url', 'http://127.0.0.1:9', '--retries', '1'], { cwd: repo });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /retrying in/);
    assert.match(r.stderr, /could not be reached: ECONNREFUSED\. \(unreachable\)/);
  });
});
