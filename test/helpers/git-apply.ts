// lspd's patches are judged by git itself: applied with `git apply` to a scratch copy of
// the fixture they were made on (edit-rename, edit-code-actions).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fixturesDir } from './lsp-harness.js';

/** Apply `patch` with git to a copy of fixture `fx` (its dir pushed on `scratch` for removal); the copy's dir. */
export function appliedToFixture(fx: string, patch: string, scratch: string[]): string {
  const dir = mkdtempSync(join(tmpdir(), `lspd-patch-${fx}-`));
  scratch.push(dir);
  cpSync(join(fixturesDir, fx), dir, { recursive: true });
  writeFileSync(join(dir, '.patch'), patch);
  const r = spawnSync('git', ['apply', '--whitespace=nowarn', '.patch'], { cwd: dir, encoding: 'utf8' });
  assert.equal(r.status, 0, `git apply: ${r.stderr}\n${patch}`);
  return dir;
}
