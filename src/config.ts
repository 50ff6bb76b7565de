// The one configuration object. Every setting is declared here once, with a
// default and a description; `loadConfig` reads the environment (and an optional
// JSON file named by LSPD_CONFIG, which the environment overrides), validates it,
// and freezes it. Nothing else in lspd reads process.env.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** Where images/setup.sh makes the Debian 13 root by default (outside the checkout: it is a system tree, shared by checkouts, kept across `git clean`). */
export const DEFAULT_DEBIAN13_ROOT = '/opt/lspd/debian13';
/** crates.io's sparse index, cargo's own default for crates-io. */
export const CRATES_IO_SPARSE = 'sparse+https://index.crates.io/';

const int = (def: number, min = 0) => z.coerce.number().int().min(min).default(def);
const bool = (def: boolean) =>
  z
    .union([z.boolean(), z.enum(['true', 'false', '1', '0'])])
    .transform((v) => v === true || v === 'true' || v === '1')
    .default(def);
const list = (def: string[]) =>
  z
    .union([z.array(z.string()), z.string()])
    .transform((v) =>
      Array.isArray(v)
        ? v
        : v
            .split(',')
            .map((s) => s.trim())
            .filter(Boolean),
    )
    .default(def);

/** host:port, IPv6 hosts in brackets. */
const listen = z
  .string()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'expected host:port, e.g. 127.0.0.1:7420')
  .default('127.0.0.1:7420');

export const configSchema = z.object({
  // --- service ---
  listen: listen.describe('Address the HTTP server listens on (host:port). Off loopback only with tokens.'),
  dataDir: z
    .string()
    .min(1)
    .default('./data')
    .describe(
      'Directory for roots, dependency caches and server caches. Start-up refuses one a jail could see (under /usr, node_modules, jail/build, …); so for LSPD_TOKENS and LSPD_CONFIG.',
    ),
  tokensFile: z.string().optional().describe('Path to the tokens file; when unset, only loopback is served.'),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info').describe('pino log level.'),
  shutdownGraceMs: int(10_000).describe('How long SIGTERM waits for in-flight requests before closing sessions.'),
  jsonBodyLimitBytes: int(1 * MiB, 1024).describe('Largest JSON request body accepted.'),
  heapBudgetFraction: z.coerce
    .number()
    .gt(0)
    .max(1)
    .default(0.75)
    .describe(
      "Part of V8's heap limit (node --max-old-space-size, else V8's default for the host) the daemon's heap may reach before new uploads, diffs and tree walks are refused with 503 busy and Retry-After; queries, file reads and deletes still answer. A quarter is left for what admitted work grows to and for garbage not yet collected: past the limit V8 aborts the process, every org's sessions with it.",
    ),

  // --- tree store ---
  maxTreeBytes: int(4 * GiB, 1).describe('Largest total size of the files of one uploaded tree (bytes, uncompressed).'),
  maxTreeFiles: int(200_000, 1).describe('Most entries one uploaded tree may hold.'),
  maxFileBytes: int(256 * MiB, 1).describe('Largest single file in an uploaded tree.'),
  maxHardLinksPerFile: int(1000, 1).describe(
    "Most names one file may have in an uploaded tree (the file and its tar hard links); a tree with more is refused 422. Every root composed on it links each name again, and ext4 stops at 65,000 links per inode, after which a compose must copy the file: a bound here keeps that at least 65 roots away (and those copies are charged and checked against the org's room). No source tree needs more: git records no hard links.",
  ),
  diskBlockBytes: int(4096, 512).describe(
    "The data dir's filesystem block (ext4: 4096). The quota charges what ext4 allocates, so an org's charge stays within 10% of `du -sB1` of its roots: a file's data in whole blocks, a directory one block and 1.5x its entries' bytes past it, a symlink with a target of 60 bytes or more one block, tree.idx and meta.json in blocks. A tree of empty directories or empty files with long names is charged the blocks it holds, not zero.",
  ),
  diskQuotaBytes: int(50 * GiB, 1).describe(
    'Disk for roots and their dependency caches; past it, unheld roots of orgs above their share are evicted, least recently used first.',
  ),
  orgDiskQuotaBytes: z.coerce
    .number()
    .int()
    .min(1)
    .optional()
    .describe(
      "Disk one org may use for roots and dependency caches (default and most: LSPD_DISK_QUOTA_BYTES). Past it the org's own least recently used unheld roots are evicted; an upload that cannot fit is refused 507. A full store evicts only orgs above their share (this, and at most the global quota over the orgs storing roots).",
    ),
  maxUploads: int(16, 1).describe(
    'Uploads (PUT of a tree) running at once, from the first byte of their body to their answer, shared between orgs by the fair-share rule; past its share an org gets 503 busy.',
  ),
  uploadMemoryBytes: int(512 * MiB, MiB).describe(
    "Memory uploads in progress may hold: every admitted entry's name and link target until the tree is indexed, and a composed upload's decoded base index; fair-shared between orgs. An upload past its org's share gets 503 busy; one that no share could hold, 413 too_large.",
  ),
  uploadReadTimeoutMs: int(60_000, 100).describe(
    'An upload whose body brings no byte for this long while lspd waits for it is cut (400 upload_aborted): its staging is removed and nothing is charged.',
  ),

  // --- query bounds (DESIGN.md "Bounds") ---
  maxTargetFileBytes: int(2 * MiB, 1).describe('Largest file a query may target.'),
  maxFrameBytes: int(16 * MiB, 1024).describe('Largest LSP frame (Content-Length) read from a server.'),
  maxMessagesPerRequest: int(64, 1).describe('Most server messages inspected while answering one request.'),
  maxInspectBytes: int(32 * MiB, 1024).describe('Most bytes of server JSON inspected while answering one request.'),
  maxLocations: int(200, 1).describe('Most locations rendered in one answer (the total is still reported).'),
  maxCallNodes: int(200, 1).describe(
    'Most nodes in one call or type hierarchy answer; only these are expanded, one server request each (the total found is still reported).',
  ),
  maxHoverBytes: int(64 * 1024, 256).describe('Longest hover text returned.'),
  maxAnswerBytes: int(1 * MiB, 1024).describe('Largest answer body.'),
  maxPatchBytes: int(512 * 1024, 1024).describe(
    'Largest patch POST /v1/check takes (413 past it; the JSON body around it is bounded by LSPD_JSON_BODY_LIMIT_BYTES too).',
  ),
  maxPatchFiles: int(50, 1).describe('Most files one checked patch may change (413 past it).'),
  maxPatchHunks: int(500, 1).describe('Most hunks one checked patch may hold (413 past it).'),
  maxCheckDependents: int(30, 0).describe(
    'Most files that depend on the changed ones a check also checks (found by references at the top-level declarations the patch changes).',
  ),
  queryTimeoutMs: int(70_000, 100).describe('Deadline for one query in all, cleanup included.'),
  cleanupReserveMs: int(3_000, 0).describe('Part of the query deadline kept for cancelling and cleanup.'),
  maxQueuedQueries: int(256, 1).describe('Queries waiting for a server past which new ones get 503 with Retry-After.'),
  maxFileReads: int(16, 1).describe(
    'File reads (GET …/files, the read_file tool) running at once, shared between orgs by the fair-share rule; past its share an org gets 503 busy.',
  ),
  resultCacheEntries: int(10_000, 0).describe('Entries in the result cache (roots are immutable, so a hit is exact).'),
  resultCacheBytes: int(128 * MiB, 0).describe(
    'Bytes the result cache holds: each answer is kept serialized and charged its length; past it the least recently used go (0: no cache).',
  ),
  diffCacheBytes: int(32 * MiB, 0).describe(
    'Bytes the /v1/diff cache holds: each page answered is kept serialized and charged its length, never a whole diff (0: no cache).',
  ),
  fileCacheBytes: int(128 * MiB, MiB).describe(
    'Bytes of tree text kept in memory for previews and query targets (half each), charged with the per-line overhead of the heap.',
  ),

  // --- sessions ---
  typescriptServer: z
    .enum(['native', 'tsserver'])
    .default('native')
    .describe('TS/JS server: the native TypeScript 7 server, or typescript-language-server with the pinned TypeScript 5.'),
  idleTimeoutMs: int(10 * 60_000, 1000).describe('Idle time after which a session nobody holds is shut down.'),
  reapIntervalMs: int(30_000, 100).describe('How often the reaper looks for idle sessions.'),
  initializeTimeoutMs: int(30_000, 100).describe('Deadline for the initialize handshake.'),
  shutdownTimeoutMs: int(3_000, 100).describe('Deadline for shutdown/exit before the process group is killed.'),
  readyTimeoutMs: int(30_000, 0).describe('How long a query waits for a server that is indexing before answering incomplete.'),
  readyGraceMs: int(50, 0).describe('Quiet time after the last $/progress end before a server counts as ready.'),
  diagnosticsSettleMs: int(150, 0).describe(
    "After a document's first pushed diagnostics, how long a diagnostics query waits for another push (servers publish syntax, then semantic, results).",
  ),
  diagnosticsWindowMs: int(4_000, 100).describe('How long to wait for pushed diagnostics after didOpen.'),
  maxSessions: int(64, 1).describe('Most live language-server sessions; past it the least recently used idle one is stopped.'),
  repoSessionsKept: int(2, 1).describe(
    "Sessions of one server and workspace kept across the commits of one repo: when a newer commit's session starts, idle ones of older commits past this many (most recently used kept) are stopped, and so are older commits' sessions no query ever used (a warm-up's guess). CI pushes commit after commit; each held a TS session of its own (two commits of playwright: 6 sessions, 3.3 GiB).",
  ),
  spawnBackoffMaxMs: int(60_000, 100).describe('Longest back-off after repeated spawn failures (never a permanent mark).'),
  stderrRingBytes: int(64 * 1024, 1024).describe('Bytes of each server stderr kept (a ring).'),
  warmMaxSessions: int(4, 0).describe(
    "Sessions warmed at once: started on upload (PUT without ?warm=false), once the root's fetch is done, and driven to readiness before any query; each org gets its fair share of them. A warm-up never evicts a session nor takes the pool's reserve of free places. 0 turns warm-up off.",
  ),
  warmWorkspaces: int(2, 1).describe('Workspaces warmed per server of a root, those with the most source files first.'),
  warmOpenFiles: int(8, 1).describe(
    "Files a warm-up opens per workspace: its largest, then the files the commit changed (against its base, else the repo's previous upload), then the next largest. A first query on an open file skips the server's work on opening it.",
  ),
  warmSettleMs: int(3_000, 0).describe(
    "After a warm-up's requests and the opened files' diagnostics, how long it may wait for the server to go quiet (its jail under 10% of one CPU for 100 ms): work a server starts on its own after answering (gopls's analyses, a background index) then does not share the jail's CPU with the first query. 0: no wait.",
  ),
  warmOnStartRoots: int(8, 0).describe(
    'Stored roots warmed again when the daemon starts, the most recently used first, as if just uploaded (within the same warm-up budget); 0: none.',
  ),
  warmTimeoutMs: int(120_000, 1000).describe(
    "How long a root's warm-up may take in all (its fetch, a free place and the server's indexing included); past it, what is not started is dropped.",
  ),
  sessionRecycleRequests: int(1_000_000, 0).describe(
    "Requests after which a session is replaced: a fresh one is started and made ready, new queries move to it, the old one finishes what it holds. A safety net: growth is caught by memory (below), and each replacement costs a server's whole project load: a busy TS 7 session answers 3-4k a second, so 100,000 replaced it every ~30 s under load (and the old 5000 every few seconds); 1,000,000 is every ~5 min at that rate, never at an agent's. 0: never for a count.",
  ),
  sessionRecycleMemoryBytes: int(3 * GiB, 0).describe(
    "Memory of a session's jail (its cgroup's usage) past which it is replaced the same way, before it meets LSPD_JAIL_MEMORY_BYTES (at most ¾ of it is used, whatever this says). 0: never for memory.",
  ),

  // --- what a tree can make lspd do (bounded whatever the tree holds) ---
  maxCompileDbBytes: int(64 * MiB, 1024).describe(
    "Largest compile_commands.json generated for clangd; past it fewer sources are listed (answers say so), and a tree's own larger one is not copied.",
  ),
  maxCompileFlagsBytes: int(64 * 1024, 256).describe('Largest compile_flags.txt used; a larger one is ignored for fallback flags (answers say so).'),

  // --- jail ---
  bwrapPath: z.string().default('/usr/bin/bwrap').describe('bubblewrap binary.'),
  jailHelperPath: z.string().default('jail/build/lspd-seccomp').describe('The seccomp filter helper built from jail/.'),
  jailUidBase: int(200_000, 1000).describe('First host uid of the pool jails run as (the daemon must be root to use it).'),
  jailUidCount: int(256, 1).describe('Size of the uid pool.'),
  jailMemoryBytes: int(4 * GiB, 16 * MiB).describe('cgroup memory cap of one jail.'),
  jailPids: int(512, 8).describe('cgroup pids cap of one jail.'),
  jailCpuMillis: int(1000, 0).describe(
    'cgroup CPU cap of one jail, in thousandths of a CPU (1000: one CPU), so one spinning jail or fork bomb cannot take every core from the others; 0: no cap. Applied where the host delegates a CPU controller.',
  ),
  jailCpuBurstMillis: int(0, 0).describe(
    "CPU time, in ms, a jail may save up while idle and spend above its CPU cap, the cap then held over a longer window (the period grows to 1 s to hold it): a heavy query after an idle spell runs on more cores. Off by default: it lets a server past its start (a fork bomb started after its first answer, say) run on every core half a second at a time. Start-ups need no window: they run uncapped (LSPD_JAIL_START_UNCAPPED_MS). 0: the kernel's 100 ms window, no burst.",
  ),
  jailStartUncappedMs: int(10_000, 0).describe(
    "How long a language server's jail may run without its CPU cap while it starts: until its first answer, this long at most. A start-up on every core is what keeps a cold first answer near the bare server's; its org's CPU share (equal for every org) still bounds it, and a fork bomb or a spinning server started later is capped. 0: capped from the start.",
  ),
  jailParkedGates: z.coerce
    .number()
    .int()
    .min(0)
    .max(8)
    .default(1)
    .describe(
      "Jail gates (jail/gate.c) kept started ahead of need. Node's spawn() forks the whole daemon, 10-20 ms at a few hundred MB resident, on the thread every request shares; a parked gate takes that off a cold query's path (its replacement is spawned once no language server is starting). Each is an idle process of about 1 MB, root until a jail claims it. 0: each jail spawns its own.",
    ),
  jailTmpBytes: int(512 * MiB, MiB).describe('Size of each jail private tmpfs (/tmp and HOME).'),
  cgroupRoot: z.string().default('/sys/fs/cgroup').describe('Where cgroup v2 (or v1 controllers) are mounted.'),

  // --- fetch ---
  fetchRegistries: list([
    'registry.npmjs.org:443',
    'proxy.golang.org:443',
    'sum.golang.org:443',
    'pypi.org:443',
    'files.pythonhosted.org:443',
    'repo.packagist.org:443',
    'api.github.com:443',
    'codeload.github.com:443',
    'gitlab.com:443',
    'bitbucket.org:443',
    'index.crates.io:443',
    'static.crates.io:443',
  ]).describe('host:port pairs the FETCH egress proxy lets through; nothing else leaves.'),
  fetchTimeoutMs: int(15 * 60_000, 1000).describe('Deadline of one root dependency fetch.'),
  fetchWaitMs: int(500).describe(
    "Longest a query waits for a running dependency fetch of its server's ecosystem before it answers from the tree alone (dependencies.state running, may_change): a large monorepo's fetch takes a minute, its in-tree answers need none of it.",
  ),
  fetchSlots: z.coerce
    .number()
    .int()
    .min(1)
    .max(16)
    .default(2)
    .describe(
      "Dependency fetches running at once, fair-shared per org (LSPD_ORG_RESERVE_PERCENT): with 2, an org alone runs one and the other is kept, so another org's new root starts its fetch at once instead of waiting behind a fetch that may run LSPD_FETCH_TIMEOUT_MS. A fetch mostly waits on the network and the disk, so 2 fit a 2-core host; each is a jail with its own memory and CPU caps.",
    ),
  fetchMaxBytes: int(8 * GiB, MiB).describe('Most bytes a fetch may write into a root dependency dir.'),
  cargoRegistry: z
    .string()
    .regex(/^sparse\+https?:\/\/[^\s"\\]+\/$/, 'a sparse registry URL: sparse+https://host/path/')
    .default(CRATES_IO_SPARSE)
    .describe(
      "Cargo's sparse index the Rust fetcher reads crates.io packages from (a mirror replaces crates.io by source replacement; the tree's Cargo.lock checksums still decide).",
    ),
  debian13Root: z
    .string()
    .regex(/^\/./, 'an absolute path')
    .default(DEFAULT_DEBIAN13_ROOT)
    .describe(
      'The Debian 13 root images/setup.sh makes (images/debian13-root.sh): the Rust row and its cargo fetches run with its /usr, pinned in images/pins.env (ROOT13_DEB_*).',
    ),
  goProxy: z.string().default('https://proxy.golang.org').describe('GOPROXY used by the Go fetcher.'),
  npmRegistry: z.string().default('https://registry.npmjs.org/').describe('npm registry used by the npm fetcher.'),
  pipIndexUrl: z.string().url().default('https://pypi.org/simple').describe('PEP 503 simple index the Python fetcher installs wheels from (pip --index-url).'),
  composerRepo: z
    .string()
    .url()
    .default('https://repo.packagist.org')
    .describe(
      "Composer repository used in place of packagist.org; when it is not packagist, locked dists are tried first at <repo>/dists/<package>/<reference>.<type> (a mirror's layout).",
    ),

  // --- fair shares per org (README "Tenancy"; src/tenancy/fair-share.ts has the rule) ---
  orgReservePercent: z.coerce
    .number()
    .int()
    .min(0)
    .max(50)
    .default(12)
    .describe(
      'Part of each shared pool (queued queries, sessions, jail uids, fetch slots, egress connections, file reads, uploads) an org past its fair share may not take: kept for another org, whose first request is then served at once. 0 turns fair shares off (first come, first served).',
    ),
  orgMaxQueuedQueries: int(0).describe('Most queries of one org waiting for a server; 0: no fixed cap, its fair share of LSPD_MAX_QUEUED_QUERIES decides.'),
  orgMaxSessions: int(0).describe(
    'Most sessions one org keeps busy at once (idle ones are stopped for anyone who needs the place); 0: no fixed cap, its fair share of LSPD_MAX_SESSIONS decides.',
  ),
  orgJailUids: int(0).describe('Most jail uids (live jails) of one org, never below 2; 0: no fixed cap, its fair share of LSPD_JAIL_UID_COUNT decides.'),
  orgMaxFetches: int(0).describe('Most dependency fetches of one org running at once; 0: no fixed cap, its fair share of the fetch slots decides.'),
  orgMaxEgressConnections: int(0).describe(
    'Most FETCH egress proxy connections of one org, never below 16; 0: no fixed cap, its fair share of the 512 decides.',
  ),
  metricsMaxOrgs: int(50).describe('Orgs that get their own label in per-org metrics; later ones are counted under org="_other".'),
});

export type Config = Readonly<z.infer<typeof configSchema>>;

/** Environment variable of a key: API.md names a few; the rest are LSPD_<SNAKE>. */
const envOverrides: Partial<Record<keyof z.infer<typeof configSchema>, string>> = {
  listen: 'LSPD_LISTEN',
  dataDir: 'LSPD_DATA',
  tokensFile: 'LSPD_TOKENS',
  logLevel: 'LOG_LEVEL',
};

export function envName(key: string): string {
  return envOverrides[key as keyof typeof envOverrides] ?? 'LSPD_' + key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parse env (+ LSPD_CONFIG file), validate, resolve paths, freeze. Throws ConfigError naming the bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  return loadConfigWithSource(env, cwd).config;
}

/** loadConfig, and the file LSPD_CONFIG named (resolved), if any: main checks no jail can read it. */
export function loadConfigWithSource(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): { config: Config; file?: string } {
  let raw: Record<string, unknown> = {};
  const file = env.LSPD_CONFIG ? resolve(cwd, env.LSPD_CONFIG) : undefined;
  if (file !== undefined) {
    try {
      raw = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw new ConfigError(`LSPD_CONFIG: cannot read ${env.LSPD_CONFIG}: ${(err as Error).message}`);
    }
    for (const k of Object.keys(raw)) {
      if (!(k in configSchema.shape)) throw new ConfigError(`LSPD_CONFIG: unknown setting "${k}"`);
    }
  }
  for (const key of Object.keys(configSchema.shape)) {
    const v = env[envName(key)];
    if (v !== undefined && v !== '') raw[key] = v;
  }
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const key = String(issue.path[0] ?? '');
    throw new ConfigError(`${envName(key)}: ${issue.message}`);
  }
  const c = parsed.data;
  if (c.cleanupReserveMs >= c.queryTimeoutMs) {
    throw new ConfigError(`${envName('cleanupReserveMs')}: must be less than ${envName('queryTimeoutMs')}`);
  }
  const config = Object.freeze({
    ...c,
    dataDir: resolve(cwd, c.dataDir),
    jailHelperPath: resolve(cwd, c.jailHelperPath),
    tokensFile: c.tokensFile === undefined ? undefined : resolve(cwd, c.tokensFile),
    fetchRegistries: Object.freeze([...c.fetchRegistries]) as string[],
  });
  return file === undefined ? { config } : { config, file };
}

/** Rows for README's table of variables. */
export function describeConfig(): { env: string; default: string; description: string }[] {
  return Object.entries(configSchema.shape).map(([key, schema]) => {
    const s = schema as z.ZodType;
    let def = '';
    const r = s.safeParse(undefined);
    if (r.success && r.data !== undefined) def = Array.isArray(r.data) ? r.data.join(',') : String(r.data);
    return { env: envName(key), default: def, description: s.description ?? '' };
  });
}

export function isLoopback(listenAddr: string): boolean {
  const host = listenAddr.slice(0, listenAddr.lastIndexOf(':')).replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}
