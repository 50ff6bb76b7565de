// Issue 30, items 1 and 2: an org is charged what its roots take on disk, counted
// against `du -sB1` of them, through real HTTP uploads of real tar streams:
// 1. hard-link fan-out: a tree whose file has more names than
//    LSPD_MAX_HARD_LINKS_PER_FILE is refused 422 naming the bound; a head composed
//    on a base whose file is at ext4's 65,000-link ceiling copies it, is charged the
//    copies, and is refused 507 when they do not fit the org's room.
// 2. metadata: 20,000 empty directories are refused 507 past a small quota as they
//    stream; uploads of empty directories are charged their blocks (5,000 a root
//    here: each mkdir and rmdir is a journal write, seconds apiece on a loaded
//    host); a root of empty files with long paths is charged its tree.idx.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { linkSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { SHA, assertNothingStored, packTar, put, type PackEntry } from './store-helpers.js';
import { startStoreServer, type StoreServer } from './helpers/daemon.js';

const MiB = 1024 * 1024;
const GZIP = { 'content-type': 'application/gzip' };
const TAR = { 'content-type': 'application/x-tar' };

/** `du -sB1` over every root of `org` in one call, so an inode two roots share is counted once, as on the disk. */
function duOrg(dataDir: string, org: string): number {
  const roots: string[] = [];
  const orgDir = join(dataDir, 'roots', org);
  for (const repo of readdirSync(orgDir)) for (const sha of readdirSync(join(orgDir, repo))) roots.push(join(orgDir, repo, sha));
  if (roots.length === 0) return 0;
  const out = execFileSync('du', ['-sB1', ...roots], { encoding: 'utf8' });
  return out
    .trim()
    .split('\n')
    .reduce((n, line) => n + Number(line.split('\t')[0]), 0);
}

function assertNearDu(s: StoreServer, org: string, what: string): { charged: number; du: number } {
  const charged = s.store.orgUsage().get(org) ?? 0;
  const du = duOrg(s.dataDir, org);
  assert.ok(Math.abs(charged - du) <= du * 0.1, `${what}: charged ${charged} B, du ${du} B (${((charged / du - 1) * 100).toFixed(1)}%)`);
  console.log(`# ${what}: charged ${charged} B, du -sB1 ${du} B (${((charged / du - 1) * 100).toFixed(1)}%)`);
  return { charged, du };
}

/** Give the inode of `file` more names in `scratch` until ext4 refuses one (EMLINK), as 65,000 roots linking it would. */
function pinAtLinkCeiling(file: string, scratch: string): number {
  mkdirSync(scratch, { recursive: true });
  for (let i = 0; ; i++) {
    try {
      linkSync(file, join(scratch, String(i)));
    } catch (err) {
      assert.equal((err as NodeJS.ErrnoException).code, 'EMLINK');
      return statSync(file).nlink;
    }
  }
}

const emptyDirs = (n: number, prefix = 'd'): PackEntry[] => Array.from({ length: n }, (_, i) => ({ name: `${prefix}${i}/`, type: 'directory' as const }));

describe('metadata is charged (reproduction 2)', () => {
  describe('against a small org quota', () => {
    let s: StoreServer;
    before(async () => {
      s = await startStoreServer({ env: { LSPD_ORG_DISK_QUOTA_BYTES: String(4 * MiB) } });
    });
    after(() => {
      // The refusal came mid-body: the connection the client keeps would hold close() for the keep-alive timeout.
      s.app.server.closeAllConnections();
      return s.destroy();
    });

    it('refuses 20,000 empty directories (82 MB of blocks) with 507 as they stream, and stores nothing', async () => {
      const dirsTar = gzipSync(await packTar(emptyDirs(20_000)));
      assert.ok(dirsTar.length < 200 * 1024, `the upload is ${dirsTar.length} B gzip'd`);
      const r = await put(s.url, `orga/dirs/${SHA(1)}`, dirsTar, GZIP);
      assert.equal(r.status, 507, JSON.stringify(r.body));
      assert.equal(r.body.error, 'insufficient_storage');
      assert.equal(r.body.limit, 'org_disk_quota');
      assertNothingStored(s.dataDir);
    });
  });

  describe('against a quota that holds two roots of 5,000 empty directories', () => {
    const QUOTA = 45 * MiB;
    let s: StoreServer;
    before(async () => {
      s = await startStoreServer({ env: { LSPD_ORG_DISK_QUOTA_BYTES: String(QUOTA) } });
    });
    after(() => s.destroy());

    it('charges each upload of empty directories what du counts, and evicts to stay within the quota', async () => {
      const dirsTar = gzipSync(await packTar(emptyDirs(5_000)));
      for (let i = 1; i <= 3; i++) {
        const r = await put(s.url, `orga/dirs/${SHA(i)}`, dirsTar, GZIP);
        assert.equal(r.status, 201, JSON.stringify(r.body));
        const { charged, du } = assertNearDu(s, 'orga', `after upload ${i} of 5,000 empty directories`);
        // Three are 62 MB: the org keeps what its quota holds, on disk as well as charged.
        assert.ok(charged <= QUOTA && du <= QUOTA * 1.1, `upload ${i}: charged ${charged}, du ${du}`);
      }
      assert.deepEqual(readdirSync(join(s.dataDir, 'roots/orga/dirs')).sort(), [SHA(2), SHA(3)]);

      // A head composed on it makes every directory again: charged them, not only its layer's 10 KB.
      const head = await put(s.url, `orga/dirs/${SHA(4)}?base=${SHA(3)}`, await packTar([{ name: 'layer.txt', data: Buffer.alloc(10_000, 1) }]), TAR);
      assert.equal(head.status, 201, JSON.stringify(head.body));
      assert.equal(head.body.stored_bytes, 10_000);
      assert.ok(s.store.get({ org: 'orga', repo: 'dirs', sha: SHA(4) })!.ownDiskBytes! > 5000 * 4096);
      assertNearDu(s, 'orga', 'a base of 5,000 empty directories and a head composed on it');
    });

    it('charges a root of empty files with long paths its tree.idx', async () => {
      // 11 directories of 250-byte names, then 1,500 empty files of 250-byte names: ~2.8 KB a path.
      const deep = Array.from({ length: 11 }, (_, i) => String(i).padStart(250, 'd')).join('/');
      const files: PackEntry[] = Array.from({ length: 1500 }, (_, i) => ({ name: `${deep}/${String(i).padStart(250, 'f')}`, data: '' }));
      const r = await put(s.url, `orgb/long/${SHA(1)}`, gzipSync(await packTar(files)), GZIP);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(r.body.bytes, 0);
      const idx = statSync(join(s.dataDir, 'roots/orgb/long', SHA(1), 'tree.idx')).size;
      assert.ok(idx > 4 * MiB, `tree.idx is ${idx} B`);
      const { charged } = assertNearDu(s, 'orgb', 'a root of 1,500 empty files with 2.8 KB paths');
      assert.ok(charged >= idx, `charged ${charged} B for a ${idx} B tree.idx`);
    });

    it('charges an ordinary tree of small files in whole blocks', async () => {
      const files: PackEntry[] = Array.from({ length: 500 }, (_, i) => ({ name: `src/m${i % 10}/f${i}.ts`, data: `export const v${i} = ${i};\n` }));
      files.push({ name: 'big.bin', data: Buffer.alloc(3 * MiB + 5, 1) }, { name: 'link', type: 'symlink', linkname: 'src/m1/f1.ts' });
      assert.equal((await put(s.url, `orgc/app/${SHA(1)}`, await packTar(files), TAR)).status, 201);
      assertNearDu(s, 'orgc', 'a tree of 500 small files and one of 3 MiB');
    });
  });
});

describe('hard-link fan-out (reproduction 1)', () => {
  const NAMES = 50;
  /** One 4 KiB file and NAMES-1 tar hard links to it, or to each other. */
  const fanOut = (names: number, chained = false): PackEntry[] => [
    { name: 'f.bin', data: Buffer.alloc(4096, 7) },
    ...Array.from({ length: names - 1 }, (_, i) => ({ name: `l${i}`, type: 'link' as const, linkname: chained && i > 0 ? `l${i - 1}` : 'f.bin' })),
  ];
  const layer = () => packTar([{ name: 'layer.txt', data: Buffer.alloc(10_000, 3) }]);

  describe('the bound on names per file', () => {
    let s: StoreServer;
    before(async () => {
      s = await startStoreServer({ env: { LSPD_MAX_HARD_LINKS_PER_FILE: String(NAMES) } });
    });
    after(() => s.destroy());

    it('stores a file with as many names as the bound, and refuses one more with 422 naming it', async () => {
      assert.equal((await put(s.url, `orga/fan/${SHA(1)}`, await packTar(fanOut(NAMES)), TAR)).status, 201);
      for (const chained of [false, true]) {
        const r = await put(s.url, `orga/fan/${SHA(2)}`, await packTar(fanOut(NAMES + 1, chained)), TAR);
        assert.equal(r.status, 422, JSON.stringify(r.body));
        assert.equal(r.body.error, 'unsafe_entry');
        assert.equal(r.body.entry, `l${NAMES - 1}`);
        assert.match(String(r.body.message), new RegExp(`"f.bin" would have more than ${NAMES} names \\(LSPD_MAX_HARD_LINKS_PER_FILE\\)`));
      }
      assertNothingStored(s.dataDir, [`roots/orga/fan/${SHA(1)}`]);
      assertNearDu(s, 'orga', `a 4 KiB file with ${NAMES} names`);
    });
  });

  describe('a head composed on a base whose file is at the link ceiling', () => {
    let s: StoreServer;
    let scratch: string;
    before(async () => {
      s = await startStoreServer({ env: { LSPD_MAX_HARD_LINKS_PER_FILE: String(NAMES), LSPD_ORG_DISK_QUOTA_BYTES: String(1 * MiB) } });
      assert.equal((await put(s.url, `orga/fan/${SHA(1)}`, await packTar(fanOut(NAMES)), TAR)).status, 201);
      // Scratch names on the same filesystem, outside roots/: no root is charged them.
      scratch = mkdtempSync(join(dirname(s.dataDir), 'lspd-links-'));
      assert.equal(pinAtLinkCeiling(join(s.dataDir, 'roots/orga/fan', SHA(1), 'tree/f.bin'), scratch), 65_000);
    });
    after(async () => {
      rmSync(scratch, { recursive: true, force: true });
      await s.destroy();
    });

    it('copies every name it cannot link, and is charged the copies', async () => {
      const before = s.store.orgUsage().get('orga')!;
      const r = await put(s.url, `orga/fan/${SHA(2)}?base=${SHA(1)}`, await layer(), TAR);
      assert.equal(r.status, 201, JSON.stringify(r.body));
      assert.equal(r.body.stored_bytes, 10_000);
      const head = join(s.dataDir, 'roots/orga/fan', SHA(2), 'tree');
      assert.equal(statSync(join(head, 'f.bin')).nlink, 1, 'a copy, not a link');
      const grew = s.store.orgUsage().get('orga')! - before;
      assert.ok(grew >= NAMES * 4096 + 12 * 1024, `the head added ${grew} B for ${NAMES} copies of 4 KiB and a 10 KB layer`);
      assertNearDu(s, 'orga', `base of a 4 KiB file with ${NAMES} names at the link ceiling, and a head that copied them`);
    });

    it('is refused 507 before copying past the org room, and leaves nothing', async () => {
      s.store.setHoldCheck((k) => k.org === 'orga'); // both roots in use: they cannot make room
      try {
        const room = 1 * MiB - s.store.orgUsage().get('orga')!;
        assert.ok(room > 64 * 1024 && room < NAMES * 4096 * 4, `room ${room} B`);
        // Three heads' copies pass the room; each head alone is charged within it until then.
        let refused: { status: number; body: Record<string, unknown> } | undefined;
        for (let i = 3; i <= 8 && !refused; i++) {
          const r = await put(s.url, `orga/fan/${SHA(i)}?base=${SHA(1)}`, await layer(), TAR);
          if (r.status !== 201) refused = { ...r, body: { ...r.body, sha: SHA(i) } };
        }
        assert.ok(refused, 'a head past the room was stored');
        assert.equal(refused.status, 507, JSON.stringify(refused.body));
        assert.equal(refused.body.error, 'insufficient_storage');
        assert.equal(refused.body.limit, 'org_disk_quota');
        assert.match(String(refused.body.message), /had to copy files .*65,000 links/);
        assert.ok(!readdirSync(join(s.dataDir, 'roots/orga/fan')).includes(String(refused.body.sha)));
        assert.deepEqual(readdirSync(join(s.dataDir, 'staging')), []);
        const { charged } = assertNearDu(s, 'orga', 'the heads that fit');
        assert.ok(charged <= 1 * MiB, `charged ${charged} B against a 1 MiB quota`);
      } finally {
        s.store.setHoldCheck(() => false);
      }
    });
  });
});
