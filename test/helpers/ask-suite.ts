// What the end-to-end files on a child daemon (/ask, /v1/tools, /mcp) set up the
// same way: one daemon for the file, its fixtures uploaded through PUT before the
// first test, stopped after the last; on a host that cannot run jails at all the
// tests skip saying why (spawnServing fails on a host that can but is not ready).
// Call askSuite at the top level of a test file: its hooks belong to the file.
import { after, before, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { skipOrFail } from './host.js';
import { postJson, upload, type Root } from './lsp-harness.js';
import { spawnServing, type Serving } from './daemon.js';

export interface AskSuite {
  /** The daemon's base URL (once the before hook has run). */
  url(): string;
  /** Why nothing is served on this host, for t.skip (thrown instead where nothing may skip: CI); undefined where it serves. */
  skipWhy(): string | undefined;
}

export function askSuite(o: {
  uploads: [Root, string][];
  /** More set-up once the fixtures are stored (not run where nothing is served). */
  ready?: (url: string) => Promise<void>;
  /** What to close before the daemon stops. */
  stopping?: () => Promise<void>;
}): AskSuite {
  let s: Serving | undefined;
  before(async () => {
    s = await spawnServing();
    if (s.notReady) return;
    for (const [root, fixture] of o.uploads) {
      const r = await upload(s.url, root, fixture);
      assert.equal(r.status, 201, await r.text());
    }
    await o.ready?.(s.url);
  });
  after(async () => {
    await o.stopping?.();
    await s?.close();
  });
  return {
    url() {
      if (!s) throw new Error('the daemon has not started');
      return s.url;
    },
    skipWhy: () => skipOrFail(s?.notReady ? `the jail could not be proved on this host, so nothing is served: ${s.notReady}` : undefined),
  };
}

/** POST /ask on root and assert the status; undefined (the test skipped, saying why) where nothing is served. */
export function askOn<A>(suite: AskSuite, root: Root) {
  return async (t: TestContext, body: Record<string, unknown>, status = 200): Promise<A | undefined> => {
    const why = suite.skipWhy();
    if (why) {
      t.skip(why);
      return undefined;
    }
    const r = await postJson(suite.url(), '/ask', { ...root, ...body });
    assert.equal(r.status, status, JSON.stringify(r.body));
    return r.body as A;
  };
}
