// Unit tests of the use scan: which files are read, in which order they come back, and the bounds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { filesMentioning, type ScanSource } from './use-scan.js';
import { defaultAskLimits } from './ask-service.js';

const root = { org: 'a', repo: 'b', sha: 'c'.repeat(40) };
function source(files: Record<string, string>, reads: string[] = []): ScanSource {
  return {
    listFiles: async () => Object.keys(files),
    readText: async (_r, p) => (reads.push(p), files[p]),
  };
}

test('only source files outside dependency and build dirs; qualifier mentions first; stable order', async () => {
  const reads: string[] = [];
  const src = source(
    {
      'z/uses.ts': 'greet()',
      'a/imports.ts': "import { greet } from 'greeter'",
      'node_modules/greeter/index.d.ts': 'export declare function greet(): void',
      'dist/bundle.js': 'greet()',
      'README.md': 'greet',
      'b/other.ts': 'nothing here',
    },
    reads,
  );
  assert.deepEqual(await filesMentioning(src, root, 'greet', 'greeter', defaultAskLimits), { files: ['a/imports.ts', 'z/uses.ts'], complete: true });
  assert.deepEqual(reads.sort(), ['a/imports.ts', 'b/other.ts', 'z/uses.ts']);
});

test('bounded by files and bytes', async () => {
  const files = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`f${String(i).padStart(2, '0')}.py`, 'x'.repeat(100) + ' name']));
  const few = await filesMentioning(source(files), root, 'name', undefined, { ...defaultAskLimits, maxScanFiles: 10 });
  assert.equal(few.files.length, 10);
  assert.equal(few.complete, false, 'cut by the file bound');
  const reads: string[] = [];
  const cut = await filesMentioning(source(files, reads), root, 'name', undefined, { ...defaultAskLimits, maxScanBytes: 1000 });
  assert.equal(cut.complete, false, 'cut by the byte bound');
  assert.ok(reads.length < 20, `read ${reads.length} files past a 1000-byte budget`);
});
