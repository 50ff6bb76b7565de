import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isAppError } from '../errors.js';
import { EntryChecker, normalizeName, type EntryHeader } from './entry-check.js';

const limits = { maxTreeBytes: 1000, maxTreeFiles: 20, maxFileBytes: 100 };

/** Admit headers in order; answer the refusal (code, entry, reason) or 'ok'. */
function run(headers: EntryHeader[], verify = true): string | { code: string; entry?: unknown; reason?: unknown; limit?: unknown } {
  const c = new EntryChecker(limits);
  try {
    for (const h of headers) c.admit(h);
    if (verify) c.verifySymlinks();
    return 'ok';
  } catch (err) {
    assert.ok(isAppError(err), String(err));
    return { code: err.code, ...err.extra };
  }
}
const file = (name: string, size = 1, mode = 0o644): EntryHeader => ({ name, type: 'file', size, mode });
const dir = (name: string): EntryHeader => ({ name, type: 'directory', size: 0 });
const sym = (name: string, linkname: string): EntryHeader => ({ name, type: 'symlink', linkname, size: 0 });
const hard = (name: string, linkname: string): EntryHeader => ({ name, type: 'link', linkname, size: 0 });
const unsafe = (entry: string) => ({ code: 'unsafe_entry', entry });

describe('normalizeName', () => {
  it('drops ./ prefixes, empty segments and a trailing slash', () => {
    assert.equal(normalizeName('./a//b/./c/'), 'a/b/c');
    assert.equal(normalizeName('././x'), 'x');
    assert.equal(normalizeName('./'), '');
  });
  it('refuses absolute names, .. anywhere, control characters, over-long names', () => {
    for (const bad of ['/etc/passwd', '../x', 'a/../b', 'a/..', 'a\u0000b', 'a\nb', 'a\u007fb', 'x'.repeat(256), 'a/'.repeat(2000)]) {
      assert.throws(() => normalizeName(bad), (e: unknown) => isAppError(e) && e.code === 'unsafe_entry', bad);
    }
  });
  it('keeps names that only look odd', () => {
    assert.equal(normalizeName('..a/b..'), '..a/b..');
    assert.equal(normalizeName('a\\b'), 'a\\b');
    assert.equal(normalizeName('ünïcode/名前.ts'), 'ünïcode/名前.ts');
  });
});

describe('EntryChecker', () => {
  it('admits an ordinary tree and counts files, bytes and languages', () => {
    const c = new EntryChecker(limits);
    for (const h of [dir('./'), dir('src/'), file('src/a.ts', 10), file('src/b.py', 5, 0o755), sym('l', 'src/a.ts'), hard('h', 'src/a.ts'), file('README', 3)]) c.admit(h);
    c.verifySymlinks();
    assert.equal(c.files, 5);
    assert.equal(c.bytes, 18);
    assert.deepEqual([...c.languages].sort(), ['python', 'typescript']);
  });

  it('reports the executable bit', () => {
    const a = new EntryChecker(limits).admit(file('x.sh', 1, 0o750));
    assert.equal(a.kind === 'file' && a.executable, true);
  });

  it('refuses device, fifo and unknown entry types', () => {
    for (const type of ['character-device', 'block-device', 'fifo', null]) {
      assert.deepEqual(run([{ name: 'dev', type, size: 0 }]), { ...unsafe('dev'), reason: type === null ? 'unsupported entry type' : type === 'fifo' ? 'fifo entries are not allowed' : 'device entries are not allowed' });
    }
  });

  it('refuses duplicates, however they are spelled', () => {
    assert.deepEqual(run([file('a'), file('./a')]), { ...unsafe('./a'), reason: 'duplicate entry' });
    assert.deepEqual(run([dir('d/'), dir('./d')]), { ...unsafe('./d'), reason: 'duplicate entry' });
    assert.deepEqual(run([sym('s', 'x'), file('s')]), { ...unsafe('s'), reason: 'duplicate entry' });
  });

  it('allows a directory entry after files were put in it', () => {
    assert.equal(run([file('d/x'), dir('d/')]), 'ok');
  });

  it('refuses an entry that replaces a directory with a file, or the reverse', () => {
    assert.deepEqual(run([dir('d/'), file('d')]), { ...unsafe('d'), reason: 'entry replaces a directory with a file' });
    assert.deepEqual(run([file('d/x'), file('d')]), { ...unsafe('d'), reason: 'entry replaces a directory with a file' });
    assert.deepEqual(run([file('f'), dir('f/')]), { ...unsafe('f/'), reason: 'entry replaces a file with a directory' });
    assert.deepEqual(run([file('f'), file('f/x')]), { ...unsafe('f/x'), reason: 'entry replaces a file with a directory' });
    assert.deepEqual(run([dir('d/'), sym('d', '.')]), { ...unsafe('d'), reason: 'entry replaces a directory with a file' });
  });

  it('refuses a non-directory whose name ends in /', () => {
    assert.equal((run([file('x/')]) as { code: string }).code, 'unsafe_entry');
  });

  it('refuses writing through a symlink', () => {
    assert.deepEqual(run([dir('real/'), sym('d', 'real'), file('d/evil')]), { ...unsafe('d/evil'), reason: 'path passes through a symlink' });
    assert.deepEqual(run([sym('d', '.'), dir('d/x/')]), { ...unsafe('d/x/'), reason: 'path passes through a symlink' });
  });

  it('refuses symlinks that leave the root, directly or through other links', () => {
    assert.deepEqual(run([sym('a', '/etc/passwd')]), { ...unsafe('a'), reason: 'symlink target is absolute' });
    assert.deepEqual(run([sym('a', '..')]), { ...unsafe('a'), reason: 'symlink target leaves the root' });
    assert.deepEqual(run([sym('x/y/a', '../../../etc')]), { ...unsafe('x/y/a'), reason: 'symlink target leaves the root' });
    assert.deepEqual(run([sym('x/up', '..'), sym('b', 'x/up/..')]), { ...unsafe('b'), reason: 'symlink target leaves the root' });
    assert.deepEqual(run([sym('d', 'x/y'), sym('e', 'd/../../..')]), { ...unsafe('e'), reason: 'symlink target leaves the root' });
  });

  it('catches a link whose meaning a later link changes (checked against the final tree)', () => {
    // b -> q/.. is the root while q does not exist; once q -> ., b is the root's parent.
    const headers = [sym('b', 'q/..'), sym('q', '.')];
    assert.equal(run(headers, false), 'ok');
    assert.deepEqual(run(headers), { ...unsafe('b'), reason: 'symlink target leaves the root' });
    // Lexically x/y/../.. is the root, but x -> deep/er makes it deep/.. : still inside.
    assert.equal(run([sym('b', 'x/y/../..'), dir('deep/er/'), sym('x', 'deep/er')]), 'ok');
  });

  it('keeps symlinks that stay inside, dangling or not', () => {
    assert.equal(run([sym('a/b/c', '../../x'), sym('up', 'a/b/..'), sym('dangling', 'nope/nothing')]), 'ok');
  });

  it('refuses symlink loops and empty or control-character targets', () => {
    assert.deepEqual(run([sym('a', 'b'), sym('b', 'a')]), { ...unsafe('a'), reason: 'symlink loop' });
    assert.equal((run([sym('a', '')]) as { code: string }).code, 'unsafe_entry');
    assert.equal((run([sym('a', 'x\u0000y')]) as { code: string }).code, 'unsafe_entry');
  });

  it('only allows hard links to regular files stored earlier', () => {
    assert.equal(run([file('f'), hard('h', './f')]), 'ok');
    assert.deepEqual(run([hard('h', '/etc/passwd')]), { ...unsafe('h'), reason: 'absolute path' });
    assert.deepEqual(run([hard('h', '../outside')]), { ...unsafe('h'), reason: '".." in path' });
    assert.deepEqual(run([hard('h', 'later'), file('later')]), { ...unsafe('h'), reason: 'hard link target is not a file stored earlier in this archive' });
    assert.equal((run([sym('s', 'f'), file('f'), hard('h', 's')]) as { code: string }).code, 'unsafe_entry');
    assert.equal((run([dir('d/'), hard('h', 'd')]) as { code: string }).code, 'unsafe_entry');
    assert.equal((run([dir('real/'), file('real/f'), sym('d', 'real'), hard('h', 'd/f')]) as { code: string }).code, 'unsafe_entry');
  });

  it('enforces the limits before the entry is written', () => {
    assert.deepEqual(run([file('big', 101)]), { code: 'too_large', limit: 'file_bytes' });
    assert.equal(run([file('edge', 100)]), 'ok');
    assert.deepEqual(run(Array.from({ length: 11 }, (_, i) => file(`f${i}`, 100))), { code: 'too_large', limit: 'tree_bytes' });
    assert.deepEqual(run(Array.from({ length: 21 }, (_, i) => file(`f${i}`, 0))), { code: 'too_large', limit: 'tree_files' });
    // Implied directories count as entries too: they cost inodes and memory.
    assert.deepEqual(run([file('a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s/t/u')]), { code: 'too_large', limit: 'tree_files' });
  });

  it("refuses past the org's room on disk with 507 and its reason, a tree limit first", () => {
    const c = new EntryChecker({ ...limits, room: { bytes: 250, why: 'No room for org "x".' } });
    c.admit(file('a', 100));
    c.admit(file('b', 100));
    c.admit(file('c', 50));
    c.admit(hard('h', 'a')); // shares a's data: no bytes
    assert.throws(
      () => c.admit(file('d', 1)),
      (e: unknown) => isAppError(e) && e.status === 507 && e.code === 'insufficient_storage' && e.message === 'No room for org "x".' && e.extra.limit === 'org_disk_quota',
    );
    // A file past the per-file limit is the tree's fault (413), whatever the room.
    const tight = new EntryChecker({ ...limits, room: { bytes: 10, why: 'x' } });
    assert.throws(() => tight.admit(file('big', 101)), (e: unknown) => isAppError(e) && e.code === 'too_large');
  });

  it('refuses a directory entry that carries data', () => {
    assert.equal((run([{ name: 'd/', type: 'directory', size: 512 }]) as { code: string }).code, 'bad_archive');
  });
});
