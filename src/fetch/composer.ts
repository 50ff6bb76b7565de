// The composer fetcher: `composer install --no-scripts --no-plugins` from the
// tree's composer.lock, in the FETCH jail, with Debian's composer on Debian's php.
//
// As for npm (npm.ts), the tree is immutable and not even bound: the daemon writes
// a composer.json and composer.lock into <deps>/composer/top/ (or ws/<ws>/) and
// composer installs vendor/ there; SERVE binds that vendor/ read-only over
// <tree>/<ws>/vendor, where intelephense indexes it.
//
// What is written is not a copy but a reading of the tree's files, so that nothing
// in them can make composer run code, reach another host or build from source:
// - composer.json keeps only what an install from the lock checks (name, require*,
//   conflict/replace/provide, stability). Its `scripts` (run by composer events),
//   `repositories` (vcs repositories run git, path ones read outside), `config`
//   (secure-http off, disable-tls, a cafile, tokens) and `autoload` are dropped;
//   lspd's own `config` and repository are set instead.
// - composer.lock keeps each package's dist archive (zip or tar) and loses its
//   `source`: with --prefer-dist composer falls back to cloning the source when a
//   dist fails, and git is never run here. A package with no usable dist is left
//   out and named (skipped), and taken out of `require` so the install proceeds.
//   `notification-url` goes too (composer reports installs to it).
// - The mirror: when LSPD_COMPOSER_REPO is not packagist.org, each locked dist gets
//   `<repo>/dists/%package%/%reference%.%type%` as its preferred mirror (Composer's
//   own dist-mirror mechanism, in the layout Packagist mirrors serve); composer
//   falls back to the lock's URL when the mirror has not got it. A plain-http repo
//   (an operator's choice) turns composer's secure-http off.
// - php runs with -n (no php.ini: the jail has no /etc/php anyway) and exactly the
//   extensions composer needs, by name; --ignore-platform-reqs because nothing of
//   the packages is ever run, so the host's php and extensions are not their
//   platform; --no-autoloader because intelephense reads files, not autoloaders
//   (vendor/composer/installed.json, which answers' coordinates read, is written
//   regardless). COMPOSER_ROOT_VERSION spares composer running git to guess one.
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isMountPoint, isPlainDir, isRegularFile } from './ecosystems.js';
import { JAIL_TMP } from '../jail/layout.js';
import { COMPOSER_CACHE_REL, under, writableDepsDir, wsRel, type ServeMount, type StepContext, type StepSpawn } from './step.js';

const MAX_JSON_BYTES = 64 * 1024 * 1024;
const PACKAGIST = /^https:\/\/(repo\.)?packagist\.org\/?$/;
/** Extensions composer uses, from the packages it depends on (json, filter, openssl, zlib are built in; intl renders its errors). */
const PHP_EXTENSIONS = ['phar', 'zip', 'mbstring', 'intl', 'iconv', 'ctype', 'tokenizer'];
const DIST_TYPES = new Set(['zip', 'tar']);
/** composer.json keys an install from the lock reads; everything else is dropped. */
const JSON_KEYS = ['name', 'type', 'version', 'require', 'require-dev', 'conflict', 'replace', 'provide', 'minimum-stability', 'prefer-stable'];
const MAX_SKIPPED = 200;

export async function prepareComposer(ctx: StepContext, ws: string): Promise<StepSpawn> {
  if (!ctx.tools.composer || !ctx.tools.php) throw new Error('composer not installed');
  const src = join(ctx.treeDir, ws);
  const out = await writableDepsDir(ctx, wsRel('composer', ws));
  const dst = out.host;
  const lock = await readJson(join(src, 'composer.lock'), 'composer.lock');
  const json = (await isRegularFile(join(src, 'composer.json'))) ? await readJson(join(src, 'composer.json'), 'composer.json') : {};
  const { lock: safeLock, skipped } = sanitizeLock(lock, ctx.composerRepo);
  await writeFile(join(dst, 'composer.lock'), JSON.stringify(safeLock, null, 2));
  await writeFile(
    join(dst, 'composer.json'),
    JSON.stringify(
      sanitizeJson(
        json,
        ctx.composerRepo,
        skipped.map((s) => s.name),
      ),
      null,
      2,
    ),
  );
  const cache = await writableDepsDir(ctx, COMPOSER_CACHE_REL);
  // The dists the org's store holds, where composer's cache has them (composer-dists.ts).
  await ctx.packages?.seedDists(safeLock, cache.host);
  return {
    argv: [
      ctx.tools.php,
      '-n',
      ...PHP_EXTENSIONS.flatMap((e) => ['-d', `extension=${e}`]),
      ctx.tools.composer,
      'install',
      '--no-scripts',
      '--no-plugins',
      '--no-interaction',
      '--no-progress',
      '--prefer-dist',
      '--no-autoloader',
      '--ignore-platform-reqs',
      '--no-ansi',
    ],
    env: {
      COMPOSER_HOME: `${JAIL_TMP}/composer-home`,
      COMPOSER_CACHE_DIR: cache.at,
      COMPOSER_NO_INTERACTION: '1',
      COMPOSER_ROOT_VERSION: '1.0.0',
      COMPOSER_DISABLE_XDEBUG_WARN: '1',
      COMPOSER_NO_AUDIT: '1',
      COMPOSER_PROCESS_TIMEOUT: '300',
    },
    binds: [out, cache],
    cwd: out.at,
    skipped: skipped.map((s) => `${s.name}@${s.version}: ${s.reason}`).slice(0, MAX_SKIPPED),
  };
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

async function readJson(file: string, label: string): Promise<Json> {
  if (!(await isRegularFile(file))) throw new Error(`${label} is not a regular file`);
  if ((await stat(file)).size > MAX_JSON_BYTES) throw new Error(`${label} is larger than ${MAX_JSON_BYTES} bytes`);
  const text = await readFile(file, 'utf8');
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new Error(`${label} is not valid JSON`);
  }
  if (!isObject(v)) throw new Error(`${label} is not a JSON object`);
  return v;
}

interface Skip {
  name: string;
  version: string;
  reason: string;
}

/** The lock with every package reduced to a dist-only install (see the header); what was left out, and why. */
export function sanitizeLock(lock: Json, composerRepo: string): { lock: Json; skipped: Skip[] } {
  const mirror = PACKAGIST.test(composerRepo) ? undefined : `${composerRepo.replace(/\/+$/, '')}/dists/%package%/%reference%.%type%`;
  const skipped: Skip[] = [];
  const out: Json = { ...lock };
  for (const key of ['packages', 'packages-dev']) {
    const list = lock[key];
    if (!Array.isArray(list)) continue;
    out[key] = list.flatMap((p: unknown) => {
      if (!isObject(p) || typeof p.name !== 'string') return [];
      const version = typeof p.version === 'string' ? p.version : '?';
      const dist = p.dist;
      const why = !isObject(dist)
        ? 'no dist archive in the lock (lspd never clones sources)'
        : typeof dist.type !== 'string' || !DIST_TYPES.has(dist.type)
          ? `a ${String(dist.type)} dist, not an archive composer downloads`
          : typeof dist.url !== 'string' || !/^https?:\/\//.test(dist.url)
            ? 'its dist has no http(s) URL'
            : undefined;
      if (why || !isObject(dist)) {
        skipped.push({ name: p.name, version, reason: why ?? 'no dist' });
        return [];
      }
      const rest: Json = { ...p };
      for (const k of ['source', 'notification-url', 'scripts', 'installation-source']) delete rest[k];
      const safeDist: Json = { type: dist.type, url: dist.url };
      if (typeof dist.reference === 'string') safeDist.reference = dist.reference;
      if (typeof dist.shasum === 'string') safeDist.shasum = dist.shasum;
      if (mirror && typeof dist.reference === 'string' && dist.reference !== '') safeDist.mirrors = [{ url: mirror, preferred: true }];
      return [{ ...rest, dist: safeDist }];
    });
  }
  return { lock: out, skipped };
}

/** composer.json as lspd runs it: the install-relevant keys of the tree's, lspd's repository and config. */
export function sanitizeJson(json: Json, composerRepo: string, without: string[] = []): Json {
  const out: Json = {};
  for (const k of JSON_KEYS) if (k in json) out[k] = json[k];
  for (const k of ['require', 'require-dev']) {
    const req = out[k];
    if (!isObject(req)) continue;
    out[k] = Object.fromEntries(Object.entries(req).filter(([name]) => !without.includes(name)));
  }
  if (!PACKAGIST.test(composerRepo)) out.repositories = [{ type: 'composer', url: composerRepo, canonical: true }, { 'packagist.org': false }];
  out.config = {
    'vendor-dir': 'vendor',
    'bin-dir': 'vendor/bin',
    'secure-http': !composerRepo.startsWith('http://'),
    'allow-plugins': false,
    'notify-on-install': false,
    'preferred-install': 'dist',
    'discard-changes': true,
    lock: true,
    'platform-check': false,
  };
  return out;
}

/** The vendor/ of a done workspace, bound over <tree>/<ws>/vendor (both ends checked). */
export async function composerServeMounts(treeDir: string, depsDir: string, ws: string, notes?: (line: string) => void): Promise<ServeMount[]> {
  const depsRel = `${wsRel('composer', ws)}/vendor`;
  // Written by a jailed process: only a plain directory reached through no link is bound.
  if (!(await isPlainDir(depsDir, depsRel))) return [];
  if (!(await isMountPoint(treeDir, ws, 'vendor'))) {
    notes?.(`lspd: ${under(ws, 'vendor')} in the tree is a link or a file; the fetched packages are not served there`);
    return [];
  }
  return [{ host: join(depsDir, depsRel), at: under(ws, 'vendor'), treeRel: true }];
}

export function composerHint(output: string): string | undefined {
  if (/\b403\b|Forbidden/.test(output)) return 'a dist URL in composer.lock is on a host that is not an allowed registry.';
  if (/checksum verification|shasum/i.test(output)) return 'a downloaded dist does not match the shasum in composer.lock.';
  if (/could not be downloaded|Failed to download|failed to open stream|Connection refused|timed out/i.test(output)) {
    return 'a dist archive could not be downloaded.';
  }
  if (/lock file does not contain a compatible set|not present in the lock file/i.test(output)) {
    return 'composer.json and composer.lock disagree; composer installs only from a lock in sync.';
  }
  return undefined;
}
