// What every language test sets up the same way: one real daemon for the whole
// describe block with its fixtures uploaded through PUT, an `ask` that checks what
// every answer of that language's server carries, and the ways to read locations
// back by file and line. Call langSuite inside the describe: its before/after hooks
// belong to that block.
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { lspQuery, shaOf, startLspd, uploadFixture, type Lspd } from './lsp-harness.js';

export type Root = { org: string; repo: string; sha: string };
export type Answer = Record<string, unknown>;
export type Loc = {
  path: string;
  range: { start: { line: number; character: number } };
  preview?: string;
  external?: boolean;
  module?: string;
  version?: string;
};

/** The root `acme/<repo>`; `shaOf(shaName)` keeps two files that upload the same fixture apart. */
export function acmeRoot(repo: string, shaName = repo): Root {
  return { org: 'acme', repo, sha: shaOf(shaName) };
}

/** An answer's locations. */
export const locs = (a: Answer): Loc[] => a.locations as Loc[];
/** An answer's locations as `path:line`, the form the tests compare. */
export const at = (a: Answer): string[] => locs(a).map((l) => `${l.path}:${l.range.start.line}`);

export type Sym = { name: string; kind: string; path: string; container?: string; range: { start: { line: number } } };
export type Diagnostic = { range: { start: { line: number } }; severity: string; message: string; code?: string; source?: string };

/** An answer's symbols. */
export const symbols = (a: Answer): Sym[] => a.symbols as Sym[];

/** The symbol `pick` chooses among an answer's symbols, asserted to be there. */
export function symbolIn(a: Answer, pick: (s: Sym) => boolean): Sym {
  const found = symbols(a).find(pick);
  assert.ok(found, JSON.stringify(a.symbols));
  return found;
}

/** A diagnostics answer that is complete (the server has said all it will); its diagnostics. */
export function completeDiagnostics(a: Answer): Diagnostic[] {
  assert.equal(a.incomplete, false);
  return a.diagnostics as Diagnostic[];
}

/** A complete diagnostics answer with none: the file is clean. */
export function assertClean(a: Answer, message?: string): void {
  assert.deepEqual(completeDiagnostics(a), [], message);
}

/** What the daemon adds to every answer beside the server's result: the provenance of its dependencies and the time it took. */
export function assertAnswerFrame(a: Answer): void {
  assert.equal(a.dependency_freshness, 'server_observed_not_attested');
  assert.equal(typeof a.elapsed_ms, 'number');
}

type StartOpts = NonNullable<Parameters<typeof startLspd>[0]>;

export interface LangSuite {
  /** The daemon (set once the before hook has run). */
  daemon(): Lspd;
  /** POST the query on root; assert 200, the server's name, `untrusted` and `checks`; the answer. */
  ask(root: Root, body: Answer): Promise<Answer>;
}

/**
 * Start a daemon before the block's tests (options made at that time, so a registry
 * they name is built only when the block runs), upload each [root, fixture], close it after.
 */
export function langSuite(o: {
  /** The server every `ask` must be answered by. */
  server?: string;
  uploads: [Root, string][];
  start?: () => StartOpts;
  /** What else every answer of this suite must carry. */
  checks?: (a: Answer, body: Answer) => void;
}): LangSuite {
  let d: Lspd | undefined;
  before(async () => {
    d = await startLspd(o.start?.());
    for (const [root, fixture] of o.uploads) await uploadFixture(d.url, root, fixture);
  });
  after(() => d?.close());
  const daemon = (): Lspd => {
    if (!d) throw new Error('the daemon has not started');
    return d;
  };
  return {
    daemon,
    async ask(root, body) {
      const r = await lspQuery(daemon().url, { ...root, ...body });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const a = r.body;
      if (o.server !== undefined) assert.equal(a.server, o.server);
      assert.equal(a.untrusted, true);
      o.checks?.(a, body);
      return a;
    },
  };
}
