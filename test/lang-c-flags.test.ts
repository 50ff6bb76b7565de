// Flags a tree may not give clangd, with a real plugin: the test builds (cc) a
// shared object whose constructor prints a marker to stderr and exits 97, proves
// it does that when loaded, and puts it in trees whose compile_flags.txt,
// compile_commands.json (`arguments` and `command` forms) and .clangd all ask
// clangd to load it (-fplugin=, -Xclang -load, -fpass-plugin=, a response file).
// Real clangd in the real SERVE jail answers right, its session never died (one
// spawn per root: a loaded plugin would have ended it, its stderr naming the
// marker), the generated database holds none of those arguments, and the answers
// say what was removed.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLANGD } from '../src/lsp/servers/rows/c.js';
import { lacksBinaries, skipOrFail } from './helpers/host.js';
import { cannotJail, fixturesDir, lineOf, lspQuery, position, shaOf, startLspd, uploadDir, type Lspd } from './helpers/lsp-harness.js';

const MARKER = 'LSPD-PLUGIN-MARKER-7f3a';
// clangd where its row finds it (Debian's clangd-16), and cc to build the plugin:
// both through host.ts, so under CI their absence fails this file instead of skipping it.
const skip =
  cannotJail() ??
  lacksBinaries('clangd', CLANGD) ??
  skipOrFail(spawnSync('cc', ['--version']).status === 0 ? undefined : 'no C compiler (cc) to build the plugin');

const PLUGIN_C = `
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void lspd_marker(void) {
  fputs("${MARKER}\\n", stderr);
  fflush(stderr);
  FILE *f = fopen("/tmp/${MARKER}", "w");
  if (f) fclose(f);
  _exit(97);
}
`;

/** Every way of asking for the plugin, as flags (relative to the workspace, where p.so is). */
const PLUGIN_FLAGS = ['-fplugin=./p.so', '-Xclang', '-load', '-Xclang', './p.so', '-fpass-plugin=./p.so', '@plugin.rsp'];
const FORBIDDEN = /plugin|^-Xclang|^-load$|^@|p\.so/;

const C = 'c-basic';
type Loc = { path: string; range: { start: { line: number } } };
const at = (a: Record<string, unknown>) => (a.locations as Loc[]).map((l) => `${l.path}:${l.range.start.line}`);

describe('clangd never gets a flag that loads code from the tree', { skip }, () => {
  let d: Lspd;
  const scratch: string[] = [];
  const flagsRoot = { org: 'acme', repo: 'c-plugin-flags', sha: shaOf('c-plugin-flags') };
  const cdbRoot = { org: 'acme', repo: 'c-plugin-cdb', sha: shaOf('c-plugin-cdb') };

  /** c-basic, with the plugin built into it and a .clangd and response file asking for it. */
  function hostileTree(extra: Record<string, string>): string {
    const dir = mkdtempSync(join(tmpdir(), 'lspd-plugin-tree-'));
    scratch.push(dir);
    cpSync(join(fixturesDir, C), dir, { recursive: true });
    const src = mkdtempSync(join(tmpdir(), 'lspd-plugin-src-'));
    scratch.push(src);
    writeFileSync(join(src, 'p.c'), PLUGIN_C);
    const cc = spawnSync('cc', ['-shared', '-fPIC', '-o', join(dir, 'p.so'), join(src, 'p.c')], { encoding: 'utf8' });
    assert.equal(cc.status, 0, cc.stderr);
    writeFileSync(join(dir, 'plugin.rsp'), '-fplugin=./p.so\n');
    writeFileSync(join(dir, '.clangd'), 'CompileFlags:\n  Add: [-fplugin=./p.so, -Xclang, -load, -Xclang, ./p.so]\n');
    for (const [rel, text] of Object.entries(extra)) writeFileSync(join(dir, rel), text);
    return dir;
  }

  before(async () => {
    d = await startLspd();
    const flagsTree = hostileTree({ 'compile_flags.txt': ['-Iinclude', ...PLUGIN_FLAGS, '-DFROM_FLAGS'].join('\n') + '\n' });
    // The control: loaded, the object prints its marker and ends the process.
    const control = spawnSync('/bin/true', { env: { LD_PRELOAD: join(flagsTree, 'p.so') }, encoding: 'utf8' });
    assert.equal(control.status, 97, 'the plugin ends a process that loads it');
    assert.match(control.stderr, new RegExp(MARKER));
    await uploadDir(d.url, flagsRoot, flagsTree);

    const args = (file: string) => ['/src/tools/evil-cc', ...PLUGIN_FLAGS, '-Iinclude', '-c', file];
    const cdb = [
      { directory: '/src', file: 'src/main.c', arguments: args('src/main.c') },
      { directory: '/src', file: 'src/greet.c', command: args('src/greet.c').join(' ') },
    ];
    await uploadDir(d.url, cdbRoot, hostileTree({ 'compile_commands.json': JSON.stringify(cdb) }));
  });
  after(async () => {
    await d?.close();
    for (const s of scratch) rmSync(s, { recursive: true, force: true });
  });

  const ask = async (root: typeof flagsRoot, body: Record<string, unknown>) => {
    const r = await lspQuery(d.url, { ...root, ...body });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.server, 'clangd');
    assert.equal(r.body.server_stderr, undefined);
    return r.body;
  };

  for (const [name, root] of [
    ['compile_flags.txt', flagsRoot],
    ['compile_commands.json', cdbRoot],
  ] as const) {
    test(`${name}: answers right, the plugin never loaded, the database carries none of its flags`, async () => {
      const call = position(C, 'src/main.c', 'greet(buf, sizeof buf, "world")');
      const def = await ask(root, { op: 'definition', path: 'src/main.c', ...call });
      assert.equal(def.incomplete, false);
      assert.deepEqual(at(def), [`src/greet.c:${lineOf(C, 'src/greet.c', 'int greet(')}`]);
      assert.match(String(def.notes), new RegExp(`${name.replace('.', '\\.')}: removed \\d+ arguments a tree may not give clangd`));
      // References need the background index: every listed file was parsed with the filtered flags.
      const refs = await ask(root, { op: 'references', path: 'src/main.c', ...call });
      assert.equal(refs.incomplete, false);
      assert.equal((refs.locations as Loc[]).length, 5, JSON.stringify(at(refs)));
      // A loaded plugin ends clangd: then the next query would start another session.
      const again = await ask(root, { op: 'hover', path: 'src/main.c', ...call });
      assert.match(String(again.contents), /int greet\(char \*out, int size, const char \*name\)/);
    });
  }

  test('one clangd per root, never restarted; no generated database holds a plugin argument', async () => {
    const spawns = (await d.metrics.spawns.get()).values.filter((v) => v.labels.server === 'clangd');
    assert.deepEqual(
      spawns.map((v) => v.value),
      [2],
      'two roots, two sessions, none died',
    );
    const sessions = join(d.config.dataDir, 'sessions');
    const dbs = readdirSync(sessions).flatMap((s) => readdirSync(join(sessions, s)).map((f) => join(sessions, s, f)));
    assert.equal(dbs.length, 2, 'both sessions are alive with their databases');
    for (const f of dbs) {
      const db = JSON.parse(readFileSync(f, 'utf8')) as { file: string; arguments: string[]; command?: string }[];
      assert.ok(db.length >= 2, f);
      for (const e of db) {
        assert.equal(e.command, undefined, 'given as arguments, never a command clangd would split itself');
        assert.deepEqual(
          e.arguments.filter((a) => FORBIDDEN.test(a)),
          [],
          JSON.stringify(e),
        );
        assert.match(e.arguments[0]!, /^(clang|cc)$/, 'the driver is a bare compiler name');
      }
    }
  });
});
