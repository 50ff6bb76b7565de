import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isAppError } from '../errors.js';
import { EntryChecker, normalizeName, type EntryHeader } from './entry-check.js';

const limits = { maxTreeBytes: 1000, maxTreeFiles: 20, maxFileBytes: 100 };

/** Admit headers in order; answer the refusal (code, entry, reason) or 'ok'. */
function run(headers: EntryHeader[], verify = true, lim = limits): string | { code: string; entry?: unknown; reason?: unknown; limit?: unknown } {
  const c = new EntryChecker(lim);
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
      assert.throws(
        () => normalizeName(bad),
        (e: unknown) => isAppError(e) && e.code === 'unsafe_entry',
        bad,
      );
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
    for (const h of [dir('./'), dir('src/'), file('src/a.ts', 10), file('src/b.py', 5, 0o755), sym('l', 'src/a.ts'), hard('h', 'src/a.ts'), file('README', 3)])
      c.admit(h);
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
      assert.deepEqual(run([{ name: 'dev', type, size: 0 }]), {
        ...unsafe('dev'),
        reason: type === null ? 'unsupported entry type' : type === 'fifo' ? 'fifo entries are not allowed' : 'device entries are not allowed',
      });
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
    // In 512-byte blocks: the root's own blocks, and one a file.
    const empty = new EntryChecker({ ...limits, blockBytes: 512 }).disk.bytes;
    const c = new EntryChecker({ ...limits, blockBytes: 512, room: { bytes: empty + 3 * 512, why: 'No room for org "x".' } });
    c.admit(file('a', 100));
    c.admit(file('b', 100));
    c.admit(file('c', 50));
    c.admit(hard('h', 'a')); // shares a's data: no bytes
    assert.throws(
      () => c.admit(file('d', 1)),
      (e: unknown) =>
        isAppError(e) && e.status === 507 && e.code === 'insufficient_storage' && e.message === 'No room for org "x".' && e.extra.limit === 'org_disk_quota',
    );
    // A file past the per-file limit is the tree's fault (413), whatever the room.
    const tight = new EntryChecker({ ...limits, room: { bytes: 10, why: 'x' } });
    assert.throws(
      () => tight.admit(file('big', 101)),
      (e: unknown) => isAppError(e) && e.code === 'too_large',
    );
  });

  it('charges a directory its block against the room, and a file whole blocks', () => {
    const empty = new EntryChecker({ ...limits, blockBytes: 512 }).disk.bytes;
    const c = new EntryChecker({ ...limits, blockBytes: 512, room: { bytes: empty + 2 * 512, why: 'full' } });
    c.admit(dir('d1/'));
    c.admit(file('d1/empty', 0));
    c.admit(dir('d2/'));
    assert.equal(c.disk.bytes, empty + 2 * 512);
    assert.throws(
      () => c.admit(dir('d3/')),
      (e: unknown) => isAppError(e) && e.status === 507,
    );
    assert.throws(
      () => c.admit(file('d1/f', 1)),
      (e: unknown) => isAppError(e) && e.status === 507,
    );
  });

  it('refuses a file with more names than maxHardLinksPerFile, a link to a link counting against the same file', () => {
    const lim = { ...limits, maxHardLinksPerFile: 3 };
    assert.equal(run([file('f'), hard('a', 'f'), hard('b', 'a')], true, lim), 'ok');
    for (const last of [hard('c', 'f'), hard('c', 'a'), hard('c', 'b')]) {
      const r = run([file('f'), hard('a', 'f'), hard('b', 'a'), last], true, lim);
      assert.equal(typeof r === 'object' && r.code, 'unsafe_entry');
      assert.match(String(typeof r === 'object' && r.reason), /file "f" would have more than 3 names \(LSPD_MAX_HARD_LINKS_PER_FILE\)/);
    }
    assert.equal(run([file('f'), file('g'), hard('a', 'f'), hard('b', 'f'), hard('c', 'g'), hard('d', 'g')], true, lim), 'ok');
  });

  it('refuses a directory entry that carries data', () => {
    assert.equal((run([{ name: 'd/', type: 'directory', size: 512 }]) as { code: string }).code, 'bad_archive');
  });
});

/**
 * The symlink walk before it was made linear (a stack joined for every segment,
 * a chain re-expanded at every hop), kept as the oracle: the linear walk must
 * refuse exactly what this refused, naming the same entry for the same reason.
 */
function oracleEscapes(links: Map<string, string>, path: string, target: string): string | undefined {
  const parent = path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '';
  const stack = parent === '' ? [] : parent.split('/');
  let rest = target.split('/');
  let hops = 0;
  while (rest.length > 0) {
    const seg = rest.shift()!;
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (stack.length === 0) return 'symlink target leaves the root';
      stack.pop();
      continue;
    }
    stack.push(seg);
    const next = links.get(stack.join('/'));
    if (next === undefined) continue;
    if (next.startsWith('/')) return 'symlink target leaves the root';
    if (++hops > 40) return 'symlink loop';
    stack.pop();
    rest = [...next.split('/'), ...rest];
  }
  return undefined;
}

/** What the oracle says of symlinks admitted in this order: checked on arrival, then against the final tree. */
function oracle(headers: { name: string; linkname: string }[]): string | { code: string; entry: string; reason: string } {
  const links = new Map<string, string>();
  for (const h of headers) {
    const why = oracleEscapes(links, h.name, h.linkname);
    if (why) return { code: 'unsafe_entry', entry: h.name, reason: why };
    links.set(h.name, h.linkname);
  }
  for (const [path, target] of links) {
    const why = oracleEscapes(links, path, target);
    if (why) return { code: 'unsafe_entry', entry: path, reason: why };
  }
  return 'ok';
}

/** A small deterministic PRNG (mulberry32): the same cases every run. */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('symlink resolution (linear, budgeted)', () => {
  const big = { maxTreeBytes: 1e9, maxTreeFiles: 1e7, maxFileBytes: 1e9 };
  function check(headers: EntryHeader[]): { answer: ReturnType<typeof run>; c: EntryChecker } {
    const c = new EntryChecker(big);
    try {
      for (const h of headers) c.admit(h);
      c.verifySymlinks();
      return { answer: 'ok', c };
    } catch (err) {
      assert.ok(isAppError(err), String(err));
      return { answer: { code: err.code, ...err.extra }, c };
    }
  }

  it('refuses exactly what the quadratic walk refused (random trees of links)', () => {
    // Leaves only: no candidate is another's ancestor, so every header is admissible
    // but for where its target leads.
    const places = ['a', 'b', 'c', 'd/a', 'd/b', 'd/e/a', 'd/e/b', 'f/g/h/a'];
    const names = ['..', '..', '.', '', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'x'];
    const rand = prng(13);
    const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;
    const tally = new Map<string, number>();
    for (let n = 0; n < 20_000; n++) {
      const headers: { name: string; linkname: string }[] = [];
      const free = [...places];
      const count = 1 + Math.floor(rand() * 6);
      for (let i = 0; i < count && free.length > 0; i++) {
        const name = free.splice(Math.floor(rand() * free.length), 1)[0]!;
        let linkname = '';
        while (linkname === '' || linkname.startsWith('/')) {
          linkname = Array.from({ length: 1 + Math.floor(rand() * 7) }, () => pick(names)).join('/');
        }
        headers.push({ name, linkname });
      }
      const want = oracle(headers);
      const got = run(headers.map((h) => sym(h.name, h.linkname)));
      assert.deepEqual(got, want, JSON.stringify(headers));
      const key = typeof want === 'string' ? want : want.reason;
      tally.set(key, (tally.get(key) ?? 0) + 1);
    }
    // The cases cover every answer, plentifully.
    for (const k of ['ok', 'symlink target leaves the root', 'symlink loop']) assert.ok((tally.get(k) ?? 0) > 1000, `${k}: ${tally.get(k)}`);
  });

  it('refuses exactly what the quadratic walk refused (random long chains, near the 40-link limit)', () => {
    const rand = prng(40);
    let loops = 0;
    let oks = 0;
    for (let n = 0; n < 300; n++) {
      const count = 30 + Math.floor(rand() * 30);
      const headers: { name: string; linkname: string }[] = [];
      for (let i = 0; i < count; i++) {
        // Mostly a link to an earlier one (long chains), now and then through a dir or twice.
        const j = Math.max(0, i - 1 - Math.floor(rand() * rand() * 4));
        const to = i === 0 ? 'z' : rand() < 0.1 ? `l${j}/../l${j}` : rand() < 0.1 ? `d/../l${j}` : `l${j}`;
        headers.push({ name: `l${i}`, linkname: rand() < 0.05 ? `l${Math.floor(rand() * count)}` : to });
      }
      if (rand() < 0.5) headers.reverse();
      const want = oracle(headers);
      assert.deepEqual(
        run(
          headers.map((h) => sym(h.name, h.linkname)),
          true,
          big,
        ),
        want,
        JSON.stringify(headers),
      );
      if (typeof want === 'string') oks++;
      else if (want.reason === 'symlink loop') loops++;
    }
    assert.ok(loops > 30 && oks > 30, `${loops} loops, ${oks} kept`);
  });

  it('keeps the kernel limit of 40 links in one lookup', () => {
    const chain = (n: number) => [file('f'), ...Array.from({ length: n }, (_, i) => sym(`l${i}`, i === 0 ? 'f' : `l${i - 1}`))];
    // Resolving m -> l39 meets 40 links (l39 … l0) and stays inside; m -> l40 meets 41.
    assert.equal(check([...chain(40), sym('m', 'l39')]).answer, 'ok');
    assert.deepEqual(check([...chain(41), sym('m', 'l40')]).answer, { ...unsafe('m'), reason: 'symlink loop' });
    // The same through memos: the final check meets l40 after l0 … l39 were walked.
    assert.deepEqual(check([sym('m', 'l40'), ...chain(41)]).answer, { ...unsafe('m'), reason: 'symlink loop' });
    assert.deepEqual(
      oracle([
        { name: 'm', linkname: 'l40' },
        ...chain(41)
          .slice(1)
          .map((h) => ({ name: h.name, linkname: h.linkname! })),
      ]),
      { ...unsafe('m'), reason: 'symlink loop' },
    );
  });

  it('reproduction 1: 40 chained links with targets hundreds of segments long cost steps linear in the tar', () => {
    // Each link climbs 500 names deep and back, then names the previous link: the
    // old walk took seconds on this (every segment re-joined, every hop re-expanded).
    const headers: EntryHeader[] = [file('f')];
    for (let i = 0; i < 40; i++) headers.push(sym(`d${i}/l`, '../' + 'x/'.repeat(500) + '../'.repeat(500) + (i === 0 ? 'f' : `d${i - 1}/l`)));
    const { answer, c } = check(headers);
    assert.equal(answer, 'ok'); // 39 hops at most: inside the root, and kept
    const targetBytes = headers.reduce((n, h) => n + (h.linkname?.length ?? 0), 0);
    // Each target is walked once on arrival and once in the final check; every other
    // meeting of a link is one step through its memo.
    assert.ok(c.resolveSteps <= 2 * (targetBytes + headers.length * 41), `${c.resolveSteps} steps for ${targetBytes} target bytes`);
    assert.ok(c.resolveSteps <= c.resolveBudget);
  });

  it('refuses a tar built to defeat the memo once its steps pass the budget, naming the entry', () => {
    // Every target walks through the directory of the next link first, so each new
    // link ends every memo and each arrival re-walks its whole chain (up to 39 links
    // of 1000 segments): quadratic per chain, far past 2 steps per header byte.
    const headers: EntryHeader[] = [file('f')];
    for (let i = 0; i < 400; i++) {
      headers.push(sym(`d${i}/l`, `../d${i + 1}/../` + 'x/'.repeat(500) + '../'.repeat(500) + (i % 40 === 0 ? 'f' : `d${i - 1}/l`)));
    }
    const { answer, c } = check(headers);
    assert.equal(typeof answer === 'object' && answer.code, 'unsafe_entry');
    const refusal = answer as { entry: string; reason: string };
    assert.match(refusal.reason, /too many steps/);
    assert.match(refusal.entry, /^d\d+\/l$/);
    // The work stopped at the budget: steps are bounded by the counter, not by a clock.
    assert.ok(c.resolveSteps <= c.resolveBudget + 1, `${c.resolveSteps} > ${c.resolveBudget}`);
    assert.ok(c.resolveBudget <= 2 * c.headerBytes + (1 << 20));
  });

  it('spends a few steps per link on an ordinary tree of many links (pnpm-like)', () => {
    const headers: EntryHeader[] = [];
    for (let i = 0; i < 2000; i++) {
      headers.push(file(`node_modules/.pnpm/p${i}@1.0.0/node_modules/p${i}/index.js`));
      headers.push(sym(`node_modules/.pnpm/p${i}@1.0.0/node_modules/dep`, `../../p${(i + 1) % 2000}@1.0.0/node_modules/p${(i + 1) % 2000}`));
      headers.push(sym(`node_modules/p${i}`, `.pnpm/p${i}@1.0.0/node_modules/p${i}`));
    }
    const { answer, c } = check(headers);
    assert.equal(answer, 'ok');
    assert.ok(c.resolveSteps <= 4000 * 20, `${c.resolveSteps} steps for 4000 links`);
  });

  it('the yielding final check answers what the synchronous one does', async () => {
    for (const headers of [
      [sym('b', 'q/..'), sym('q', '.')],
      [sym('a', 'b'), sym('b', 'a')],
      [file('f'), sym('l', 'f')],
    ]) {
      const c = new EntryChecker(big);
      for (const h of headers) c.admit(h);
      const sync = run(headers);
      const got = await c.verifySymlinksYielding(1).then(
        () => 'ok',
        (err: unknown) => (isAppError(err) ? { code: err.code, ...err.extra } : String(err)),
      );
      assert.deepEqual(got, sync);
    }
  });
});
