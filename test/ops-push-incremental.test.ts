// `lspd push` of a commit whose parent the daemon holds sends only the change: a
// real git repository with two commits, pushed through bin/lspd.js to a real
// daemon. The layer's bytes are counted on both sides (the CLI's count and the
// daemon's lspd_upload_bytes_total), the stored root is the commit's tree (by git
// tree id, and file by file against a full upload of the same commit), and a
// replica that lacks the base gets the whole tree instead.
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { spawnDaemon, tempDir, type Daemon } from './helpers/daemon.js';
import { commitAll, git, snapshot, treeOf } from './helpers/git-trees.js';
import { runCli } from './helpers/ops.js';

interface Pushed {
  created: boolean;
  files: number;
  bytes: number;
  stored_bytes: number;
  base?: string;
  git_tree?: string;
  sent_bytes: number;
  sent_as_layer_over?: string;
}

/** Source-like text that gzip cannot shrink to nothing: each file differs. */
const text = (seed: number, lines: number) =>
  Array.from({ length: lines }, (_, i) => `export const v${seed}_${i} = ${(seed * 7919 + i * 104729) % 1000003};`).join('\n') + '\n';

describe('lspd push, incremental', () => {
  let d: Daemon;
  let repo: string;
  let first: string;
  let second: string;
  const cli = (...args: string[]) => runCli([...args, '--org', 'acme', '--url', d.url, '--json'], { cwd: repo, timeoutMs: 120_000 });
  const uploaded = async () => {
    const r = await request(`${d.url}/metrics`);
    const m = /^lspd_upload_bytes_total (\d+)/m.exec(await r.body.text());
    return Number(m?.[1] ?? 0);
  };
  const parse = (r: { code: number | null; stdout: string; stderr: string }): Pushed => {
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout) as Pushed;
  };

  before(async () => {
    d = await spawnDaemon();
    repo = tempDir('lspd-push-incr-');
    git(repo, 'init', '-q', '-b', 'main');
    for (let i = 0; i < 120; i++) {
      mkdirSync(join(repo, `src/pkg${i % 6}`), { recursive: true });
      writeFileSync(join(repo, `src/pkg${i % 6}/f${i}.ts`), text(i, 60));
    }
    mkdirSync(join(repo, 'old/deep'), { recursive: true });
    writeFileSync(join(repo, 'old/deep/x.ts'), text(999, 5));
    writeFileSync(join(repo, 'tool.sh'), '#!/bin/sh\n');
    first = commitAll(repo, 'one');
    writeFileSync(join(repo, 'src/pkg0/f0.ts'), text(5000, 60));
    writeFileSync(join(repo, 'src/added.ts'), 'export const added = true;\n');
    rmSync(join(repo, 'src/pkg1/f1.ts'));
    rmSync(join(repo, 'old'), { recursive: true });
    chmodSync(join(repo, 'tool.sh'), 0o755);
    second = commitAll(repo, 'two');
  });
  after(async () => {
    await d?.stop();
    d?.cleanup();
    rmSync(repo, { recursive: true, force: true });
  });

  it('sends the whole first commit, then only the change of the second', async () => {
    const full = parse(await cli('push', '--sha', first));
    assert.equal(full.created, true);
    assert.equal(full.sent_as_layer_over, undefined);
    assert.equal(full.git_tree, treeOf(repo, first));

    const before = await uploaded();
    const incr = parse(await cli('push'));
    const received = (await uploaded()) - before;
    assert.equal(incr.created, true);
    assert.equal(incr.sent_as_layer_over, first, 'HEAD~1 was found on the daemon');
    assert.equal(incr.base, first);
    assert.equal(incr.git_tree, treeOf(repo, second), "the daemon checked the tree id and stored the commit's tree");
    assert.equal(received, incr.sent_bytes, 'the daemon received exactly what the CLI counted');
    assert.ok(incr.sent_bytes * 10 < full.sent_bytes, `the change (${incr.sent_bytes} B) is far smaller than the tree (${full.sent_bytes} B)`);
    assert.equal(incr.files, 120 + 1 + 1 - 1, 'one added, one deleted, the old dir gone');
    assert.ok(incr.stored_bytes < 4096, `stored ${incr.stored_bytes} B for two changed files`);

    // The same commit pushed whole elsewhere is the same tree, file by file.
    const whole = parse(await runCli(['push', '--org', 'acme', '--repo', 'whole', '--full', '--url', d.url, '--json'], { cwd: repo, timeoutMs: 120_000 }));
    assert.equal(whole.sent_as_layer_over, undefined);
    const tree = (r: string) => snapshot(join(d.dataDir, 'roots/acme', r, second, 'tree'));
    const repoName = repo.slice(repo.lastIndexOf('/') + 1);
    assert.deepEqual(tree(repoName), tree('whole'));
    assert.ok(!('old' in tree(repoName)), 'the deleted directory went as one whiteout');
  });

  it('sends the whole tree when the daemon lacks the base, found or named', async () => {
    // No candidate is stored under this repo name: GET finds none, so no layer is tried.
    const probed = parse(await runCli(['push', '--org', 'acme', '--repo', 'elsewhere', '--url', d.url, '--json'], { cwd: repo, timeoutMs: 120_000 }));
    assert.equal(probed.created, true);
    assert.equal(probed.sent_as_layer_over, undefined);
    // A named base the daemon lacks: the layer is refused with 409 need_tree, and the whole tree follows.
    const before = await uploaded();
    const r = await runCli(['push', '--org', 'acme', '--repo', 'named', '--base', 'HEAD~1', '--url', d.url, '--json'], { cwd: repo, timeoutMs: 120_000 });
    const named = parse(r);
    assert.match(r.stderr, /does not hold .*sending the whole tree/);
    assert.equal(named.created, true);
    assert.equal(named.sent_as_layer_over, undefined);
    assert.equal(named.git_tree, treeOf(repo, second));
    assert.ok((await uploaded()) - before >= named.sent_bytes);
    assert.ok(named.sent_bytes > probed.sent_bytes / 2, 'the whole tree was sent');
  });
});
