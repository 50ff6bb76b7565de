// The fault fakes of test/fixtures/chaos-servers/ as server-table rows, each
// claiming a language no real row serves (so the real TypeScript row keeps
// answering beside them), for an in-process lspd (test/helpers/daemon.ts startLspd)
// that runs them in the real SERVE jail: rows can only be injected in-process (no
// test-only code in src/).
import { join } from 'node:path';
import type { ServerRow } from '../../src/lsp/servers/server-row.js';
import type { Language } from '../../src/languages.js';
import { realRows } from '../helpers/daemon.js';
import { packTar } from '../store-helpers.js';
import { fixturesDir, type Root } from './daemons.js';

/** Which fake answers for which file suffix. */
export const FAKES = {
  oom: { language: 'go', ext: 'go', script: 'oom.mjs' },
  forkBomb: { language: 'rust', ext: 'rs', script: 'fork-bomb.mjs' },
  fillTmp: { language: 'c', ext: 'c', script: 'fill-tmp.mjs' },
  hostile: { language: 'php', ext: 'php', script: 'hostile-locations.mjs' },
  smuggle: { language: 'shell', ext: 'sh', script: 'hover-smuggle.mjs' },
  wedge: { language: 'ruby', ext: 'rb', script: 'wedge.mjs' },
} as const satisfies Record<string, { language: Language; ext: string; script: string }>;
export type FakeName = keyof typeof FAKES;

const FIXTURES_AT = '/opt/fixtures';

function fakeRow(name: FakeName): ServerRow {
  const f = FAKES[name];
  return {
    name: `chaos-${name}`,
    languages: [f.language],
    argv: ['/usr/bin/node', `${FIXTURES_AT}/chaos-servers/${f.script}`],
    env: { PATH: '/usr/bin:/bin', HOME: '/home/lspd', TMPDIR: '/tmp', LANG: 'C.UTF-8' },
    // The fakes import ../fake-servers/lsp-io.mjs: bind the fixtures dir whole, read-only.
    binds: [{ host: fixturesDir, at: FIXTURES_AT }],
    rootMarkers: [],
    readiness: { kind: 'progress' },
    encodings: ['utf-16'],
    maxInFlight: 8,
    probe: async () => ({ available: true, version: 'chaos fake' }),
  };
}

/** Every fake, then the real rows. */
export function faultRows(): ServerRow[] {
  // The first row claiming a language wins (ServerTable.choose): the fakes go first, so
  // they keep their languages as real rows for Go, Rust, C, PHP, shell, … are added.
  return [...(Object.keys(FAKES) as FakeName[]).map(fakeRow), ...realRows()];
}

/** A tree for one fake: `a.<ext>` with three lines (line 0 benign, line 1 the fault), plus `extra` files. */
export async function fakeTree(name: FakeName, extra: Record<string, string> = {}): Promise<Buffer> {
  const f = FAKES[name];
  return packTar([{ name: `a.${f.ext}`, data: 'line0\nline1\nline2\n' }, ...Object.entries(extra).map(([n, data]) => ({ name: n, data }))]);
}

/** The path of the fake's file in its tree. */
export const fakeFile = (name: FakeName) => `a.${FAKES[name].ext}`;

/** A hover body at (line, 0) of the fake's file. */
export const fakeHover = (root: Root, name: FakeName, line: number) => ({
  org: root.org,
  repo: root.repo,
  sha: root.sha,
  op: 'hover',
  path: fakeFile(name),
  line,
  character: 0,
});

/** The fake's incarnation id from an `alive <id>` hover. */
export function aliveId(body: Record<string, unknown>): string | undefined {
  return /alive ([0-9a-f-]{36})/.exec(String(body.contents ?? ''))?.[1];
}

export const chaosServersDir = join(fixturesDir, 'chaos-servers');
