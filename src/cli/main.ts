// The `lspd` command line: push | status | ask | lsp | rename | actions | show | diff | check | config | token | jail.
// Built on the typed client (lspd/client); every daemon error is printed with its
// message and code and exits 1; usage errors exit 2. The daemon's own entry point
// is src/main.ts, not this.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { describeConfig } from '../config.js';
import { hashToken, permissions, type Permission } from '../tokens.js';
import { LspdClient, LspdError, routeKey, type LspQuery, type RootAnswer } from '../client/index.js';
import { readCliEnv } from './env.js';
import { archive, rootKeyOf, UsageError } from './git.js';
import { push as pushCommit } from './push.js';
import { formatAnswer, formatReady, formatRoot, humanBytes } from './print.js';
import { formatDiff } from './diff-print.js';

const HELP = `usage: lspd <command> [flags]

  push     upload this checkout's HEAD (or --sha) as a root        [--org --repo --sha --dir --no-gzip --retries N --spread N]
           only the change when the daemon holds an ancestor (--base REV names it; --full: the whole tree);
           the daemon starts the root's language servers on upload (--no-warm: it does not)
  status   readiness, jail, servers, roots and their sessions
  ask      SYMBOL: where a name is defined (--op references|hover|callers|callees) [--path P] [--depth N]
  lsp      OP [PATH[:LINE:COL]]: one LSP operation (LINE:COL 1-based, as printed; or --line/--character 0-based;
           --depth 1-3 for incomingCalls|outgoingCalls|supertypes|subtypes)
  rename   PATH LINE COL NEWNAME: the rename as a patch on stdout (LINE COL 1-based, as printed), for \`git apply\`
  actions  PATH:LINE:COL[-LINE:COL]: the code actions for the range, each with its patch     [--only quickfix,refactor,...]
  show     PATH[:START-END]: lines of a stored file (1-based, inclusive, as printed); --from deps with an
           external location's read.path reads the fetched dependency
  diff     BASE HEAD: what the change does (symbols, callers at base that may break, new diagnostics at head);
           exit 1 when head brings new errors, so CI can gate a merge        [--upload --limit N --cursor C]
  check    < PATCH: a unified diff (git diff) checked against this checkout's HEAD (or --sha) in memory only:
           the diagnostics it adds and removes; exit 1 when it adds errors                     [--upload]
  config   --markdown: the table of every daemon variable
  token    new --name N --orgs a,b|* --permissions upload,query,read,delete | hash (token on stdin)
  jail     the jail's own tool (src/cli/jail.ts)

common flags: --url (LSPD_URL, default http://127.0.0.1:7420), --token (LSPD_TOKEN; prefer the variable:
argv is visible to other users), --json (print the daemon's answer as JSON).
ask/lsp/show/diff/check take --org/--repo like push (ask/lsp/show/check: --sha too) (default: this checkout) and --upload (on 409 need_tree,
upload this checkout and retry). push --spread N uploads under each of a hot repo's N route keys
(lspd/client's \`spread\`; README "Scale-out").`;

const common = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
  org: { type: 'string' },
  repo: { type: 'string' },
  sha: { type: 'string' },
  dir: { type: 'string' },
} as const satisfies ParseArgsConfig['options'];

function args<O extends ParseArgsConfig['options']>(argv: string[], options: O) {
  try {
    return parseArgs({ args: argv, options: { ...common, ...options }, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

type Common = { url?: string | undefined; token?: string | undefined };

function client(v: Common): LspdClient {
  const env = readCliEnv();
  const token = v.token ?? env.LSPD_TOKEN;
  return new LspdClient({ url: v.url ?? env.LSPD_URL, ...(token ? { token } : {}) });
}

const out = (s: string) => process.stdout.write(s.endsWith('\n') ? s : s + '\n');
const err = (s: string) => process.stderr.write(s.endsWith('\n') ? s : s + '\n');

async function push(argv: string[]): Promise<number> {
  const { values: v } = args(argv, {
    'no-gzip': { type: 'boolean', default: false },
    retries: { type: 'string', default: '5' },
    spread: { type: 'string', default: '1' },
    base: { type: 'string' },
    full: { type: 'boolean', default: false },
    'no-warm': { type: 'boolean', default: false },
  });
  const retries = Number(v.retries);
  if (!Number.isInteger(retries) || retries < 0 || retries > 20) throw new UsageError('--retries: a whole number 0-20.');
  const spread = Number(v.spread);
  if (!Number.isInteger(spread) || spread < 1 || spread > 64) throw new UsageError('--spread: a whole number 1-64.');
  const { top, key } = await rootKeyOf(v.dir ?? process.cwd(), v, readCliEnv().LSPD_ORG);
  const c = client(v);
  try {
    // One upload per route key: each lands on the replica the ingress hashes it to,
    // and each sends only the change when that replica holds an ancestor.
    const answers = [];
    for (let shard = 0; shard < spread; shard++) {
      const r = await pushCommit(c, top, key, { gzip: !v['no-gzip'], retries, note: err, base: v.base, full: v.full, warm: !v['no-warm'], shard });
      const a = r.answer;
      const shown = {
        ...a,
        sent_bytes: r.sentBytes,
        ...(r.base ? { sent_as_layer_over: r.base } : {}),
        ...(spread > 1 ? { routeKey: routeKey(key, shard) } : {}),
      };
      answers.push(shown);
      if (!v.json)
        out(
          `${a.created ? 'stored' : 'already stored'} ${key.org}/${key.repo}@${key.sha}${spread > 1 ? ` (route key ${routeKey(key, shard)})` : ''}: ` +
            `${a.files} files, ${humanBytes(a.bytes)}${a.languages.length ? `, ${a.languages.join(', ')}` : ''}; dependency fetch ${a.fetch.state}` +
            `; sent ${humanBytes(r.sentBytes)}${r.base ? ` (the change since ${r.base.slice(0, 12)})` : ''}`,
        );
    }
    if (v.json) out(JSON.stringify(spread > 1 ? answers : answers[0], null, 2));
    return 0;
  } finally {
    await c.close();
  }
}

async function status(argv: string[]): Promise<number> {
  const { values: v } = args(argv, { limit: { type: 'string', default: '50' } });
  const c = client(v);
  try {
    const ready = await c.ready();
    // Roots need a token with `read`; readiness does not. Show what we may see.
    const list = await c.listRoots({ limit: Number(v.limit) }).catch((e: unknown) => e as LspdError);
    const roots: RootAnswer[] = [];
    if (!(list instanceof LspdError)) {
      for (const item of list.roots) {
        if (item.root) roots.push(await c.getRoot(item.root).catch(() => item as unknown as RootAnswer));
      }
    }
    if (v.json) {
      out(JSON.stringify({ ...ready, roots, ...(list instanceof LspdError ? { rootsError: list.message } : {}) }, null, 2));
    } else {
      out(formatReady(ready));
      if (list instanceof LspdError) out(`roots: not listed (${list.message})`);
      else {
        out(`roots: ${roots.length}${list.next ? '+ (more with --limit)' : ''}`);
        for (const r of roots) if (r.root && typeof r.files === 'number') out(formatRoot(r));
      }
    }
    return ready.ready ? 0 : 1;
  } finally {
    await c.close();
  }
}

const askOpts = { op: { type: 'string' }, path: { type: 'string' }, depth: { type: 'string' }, upload: { type: 'boolean', default: false } } as const;

async function queryTarget(
  v: Common & { org?: string | undefined; repo?: string | undefined; sha?: string | undefined; dir?: string | undefined; upload?: boolean | undefined },
) {
  const { top, key } = await rootKeyOf(v.dir ?? process.cwd(), v, readCliEnv().LSPD_ORG);
  const opts = v.upload ? { tree: () => archive(top, key.sha, true), gzip: true } : {};
  return { key, opts };
}

async function ask(argv: string[]): Promise<number> {
  const { values: v, positionals } = args(argv, askOpts);
  const symbol = positionals[0];
  if (!symbol || positionals.length > 1) throw new UsageError('usage: lspd ask SYMBOL [--op locate|references|hover|callers|callees] [--path P] [--depth N]');
  const { key, opts } = await queryTarget(v);
  const c = client(v);
  try {
    const a = await c.ask(
      { ...key, symbol, ...(v.op ? { op: v.op as 'locate' } : {}), ...(v.path ? { path: v.path } : {}), ...(v.depth ? { depth: Number(v.depth) } : {}) },
      opts,
    );
    out(v.json ? JSON.stringify(a, null, 2) : formatAnswer(a));
    return 0;
  } finally {
    await c.close();
  }
}

async function lsp(argv: string[]): Promise<number> {
  const { values: v, positionals } = args(argv, {
    ...askOpts,
    line: { type: 'string' },
    character: { type: 'string' },
    query: { type: 'string' },
    cursor: { type: 'string' },
  });
  const [op, target] = positionals;
  if (!op || positionals.length > 2) throw new UsageError('usage: lspd lsp OP [PATH[:LINE:COL]] [--query Q]');
  const q: Record<string, unknown> = { op };
  if (target) {
    // path:line:col, 1-based as lspd prints them; a path may itself hold colons.
    const m = /^(.*?):(\d+):(\d+)$/.exec(target);
    if (m) {
      if (Number(m[2]) < 1 || Number(m[3]) < 1) throw new UsageError('LINE:COL are 1-based.');
      Object.assign(q, { path: m[1], line: Number(m[2]) - 1, character: Number(m[3]) - 1 });
    } else q.path = target;
  }
  if (v.line !== undefined) q.line = Number(v.line);
  if (v.character !== undefined) q.character = Number(v.character);
  if (v.query !== undefined) q.query = v.query;
  if (v.cursor !== undefined) q.cursor = v.cursor;
  if (v.depth !== undefined) q.depth = Number(v.depth);
  return askLsp(v, q, formatAnswer);
}

/** One /v1/code/lsp query for `lspd lsp | rename | actions`: the answer as JSON with --json, else as `print` renders it. */
async function askLsp(
  v: Parameters<typeof queryTarget>[0] & Parameters<typeof client>[0] & { json?: boolean },
  q: Record<string, unknown>,
  print: (a: Awaited<ReturnType<ReturnType<typeof client>['lsp']>>) => string | void,
): Promise<number> {
  const { key, opts } = await queryTarget(v);
  const c = client(v);
  try {
    const a = await c.lsp({ ...key, ...q } as LspQuery, opts);
    if (v.json) out(JSON.stringify(a, null, 2));
    else {
      const text = print(a);
      if (typeof text === 'string') out(text);
    }
    return 0;
  } finally {
    await c.close();
  }
}

/** A 1-based number as printed, given on the command line. */
function oneBased(s: string | undefined, what: string): number {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`${what}: a 1-based whole number.`);
  return n;
}

async function rename(argv: string[]): Promise<number> {
  const { values: v, positionals } = args(argv, { upload: { type: 'boolean', default: false } });
  const [path, line, col, newName] = positionals;
  if (!path || !newName || positionals.length !== 4) throw new UsageError('usage: lspd rename PATH LINE COL NEWNAME (LINE COL 1-based)');
  const q = { op: 'rename', path, line: oneBased(line, 'LINE') - 1, character: oneBased(col, 'COL') - 1, newName };
  // The patch alone, so `lspd rename ... | git apply` works; nothing when nothing changes.
  return askLsp(v, q, (a) => {
    if (a.patch) process.stdout.write(a.patch);
  });
}

async function actions(argv: string[]): Promise<number> {
  const { values: v, positionals } = args(argv, { only: { type: 'string' }, upload: { type: 'boolean', default: false } });
  const [target] = positionals;
  // path:line:col or path:line:col-line:col, 1-based as lspd prints them; a path may itself hold colons.
  const m = target === undefined ? null : /^(.*?):(\d+):(\d+)(?:-(\d+):(\d+))?$/.exec(target);
  if (!m || positionals.length !== 1) throw new UsageError('usage: lspd actions PATH:LINE:COL[-LINE:COL] [--only quickfix,refactor]');
  const q: Record<string, unknown> = { op: 'codeActions', path: m[1], line: oneBased(m[2], 'LINE') - 1, character: oneBased(m[3], 'COL') - 1 };
  if (m[4] !== undefined) Object.assign(q, { endLine: oneBased(m[4], 'LINE') - 1, endCharacter: oneBased(m[5], 'COL') - 1 });
  if (v.only !== undefined) q.only = v.only.split(',').map((k) => k.trim());
  return askLsp(v, q, formatAnswer);
}

async function show(argv: string[]): Promise<number> {
  const { values: v, positionals } = args(argv, { from: { type: 'string', default: 'tree' } });
  const [target] = positionals;
  if (!target || positionals.length > 1) throw new UsageError('usage: lspd show PATH[:START-END] [--from tree|deps]');
  if (v.from !== 'tree' && v.from !== 'deps') throw new UsageError('--from: tree or deps.');
  // path:START-END or path:LINE, 1-based and inclusive as lspd prints lines; a path may itself hold colons.
  const m = /^(.*?):(\d+)(?:-(\d+))?$/.exec(target);
  const q: { path: string; start?: number; end?: number } = { path: target };
  if (m) {
    const [first, last] = [Number(m[2]), m[3] === undefined ? Number(m[2]) : Number(m[3])];
    if (first < 1 || last < first) throw new UsageError('START-END are 1-based lines, START <= END.');
    Object.assign(q, { path: m[1], start: first - 1, end: last });
  }
  const { key } = await queryTarget(v);
  const c = client(v);
  try {
    const a = await c.readFile({ ...key, ...q, from: v.from });
    if (v.json) out(JSON.stringify(a, null, 2));
    else {
      process.stdout.write(a.text);
      if (a.truncated)
        err(`lspd: cut to fit the answer bound after line ${a.end} of ${a.total_lines}; continue with ${q.path}:${a.end + 1}-${q.end ?? a.total_lines}`);
    }
    return 0;
  } finally {
    await c.close();
  }
}

async function diff(argv: string[]): Promise<number> {
  const { values: v, positionals } = args(argv, { upload: { type: 'boolean', default: false }, limit: { type: 'string' }, cursor: { type: 'string' } });
  const [baseRev, headRev] = positionals;
  if (!baseRev || !headRev || positionals.length > 2) throw new UsageError('usage: lspd diff BASE HEAD [--upload] [--limit N] [--cursor C]');
  const dir = v.dir ?? process.cwd();
  const org = readCliEnv().LSPD_ORG;
  const base = await rootKeyOf(dir, { ...v, sha: baseRev }, org);
  const head = await rootKeyOf(dir, { ...v, sha: headRev }, org);
  const q = {
    org: base.key.org,
    repo: base.key.repo,
    base: base.key.sha,
    head: head.key.sha,
    ...(v.limit !== undefined ? { limit: Number(v.limit) } : {}),
    ...(v.cursor !== undefined ? { cursor: v.cursor } : {}),
  };
  const c = client(v);
  try {
    let a;
    // With --upload, a root the daemon lacks (409 need_tree names it) is uploaded from this checkout: at most both, once each.
    for (let uploads = 0; ; uploads++) {
      try {
        a = await c.diff(q);
        break;
      } catch (e) {
        const missing = e instanceof LspdError && e.status === 409 && e.body.need === 'tree' ? (e.body.root as { sha?: string } | undefined)?.sha : undefined;
        if (!v.upload || missing === undefined || uploads >= 2) throw e;
        await c.putRoot({ org: q.org, repo: q.repo, sha: missing }, () => archive(base.top, missing, true), { gzip: true });
      }
    }
    out(v.json ? JSON.stringify(a, null, 2) : formatDiff(a, `${q.org}/${q.repo} ${q.base.slice(0, 12)}..${q.head.slice(0, 12)}`));
    return a.new_errors > 0 ? 1 : 0;
  } finally {
    await c.close();
  }
}

async function check(argv: string[]): Promise<number> {
  const { values: v, positionals } = args(argv, { upload: { type: 'boolean', default: false } });
  if (positionals.length > 0) throw new UsageError('usage: lspd check < patch.diff [--sha REV] [--upload]');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const patch = Buffer.concat(chunks).toString('utf8');
  if (!patch.trim()) throw new UsageError('lspd check reads a unified diff on stdin (e.g. git diff | lspd check).');
  const { key, opts } = await queryTarget(v);
  const c = client(v);
  try {
    const a = await c.check({ ...key, patch }, opts);
    const line = (d: { path: string; range: { start: { line: number; character: number } }; severity?: unknown; message: string }) =>
      `  ${d.path}:${d.range.start.line + 1}:${d.range.start.character + 1} ${String(d.severity ?? 'error')}: ${d.message}`;
    if (v.json) out(JSON.stringify(a, null, 2));
    else {
      const lines = [
        `${a.files.length} files checked: ${a.new.length} new, ${a.fixed.length} fixed, ${a.unchanged} unchanged${a.incomplete ? ' (incomplete)' : ''}`,
      ];
      if (a.new.length) lines.push('new:', ...a.new.map(line));
      if (a.fixed.length) lines.push('fixed:', ...a.fixed.map(line));
      for (const n of a.notes ?? []) lines.push(`note: ${n}`);
      out(lines.join('\n'));
    }
    return a.new.some((d) => d.severity === 'error') ? 1 : 0;
  } finally {
    await c.close();
  }
}

/** The README's configuration table: every variable of src/config.ts, its default and its description. */
function configTable(): string {
  const cell = (s: string) => s.replace(/\|/g, '\\|');
  const rows = describeConfig().map((r) => `| \`${r.env}\` | ${r.default === '' ? '' : '`' + cell(r.default) + '`'} | ${cell(r.description)} |`);
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}

async function config(argv: string[]): Promise<number> {
  const { values: v } = args(argv, { markdown: { type: 'boolean', default: false } });
  out(v.markdown ? configTable() : JSON.stringify(describeConfig(), null, 2));
  return 0;
}

async function token(argv: string[]): Promise<number> {
  const { values: v, positionals } = args(argv, { name: { type: 'string' }, orgs: { type: 'string' }, permissions: { type: 'string' } });
  if (positionals[0] === 'hash') {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    const t = Buffer.concat(chunks).toString('utf8').trim();
    if (!t) throw new UsageError('lspd token hash: give the token on stdin.');
    out(hashToken(t));
    return 0;
  }
  if (positionals[0] !== 'new') throw new UsageError('usage: lspd token new --name N --orgs a,b|* --permissions p,q | lspd token hash');
  if (!v.name || !v.orgs || !v.permissions) throw new UsageError('lspd token new needs --name, --orgs and --permissions.');
  const perms = v.permissions.split(',').map((s) => s.trim());
  const bad = perms.find((p) => !(permissions as readonly string[]).includes(p));
  if (bad) throw new UsageError(`unknown permission ${JSON.stringify(bad)}: use ${permissions.join(', ')}.`);
  // 32 random bytes: far past guessing, which is what lets the file keep an unsalted sha256.
  const secret = 'lspd_' + randomBytes(32).toString('base64url');
  const orgs = v.orgs === '*' ? '*' : v.orgs.split(',').map((s) => s.trim());
  const entry = { name: v.name, sha256: hashToken(secret), orgs, permissions: perms as Permission[] };
  if (v.json) out(JSON.stringify({ token: secret, entry }, null, 2));
  else {
    out(`token (shown once; give it to the client, e.g. as LSPD_TOKEN): ${secret}`);
    out(`add to the "tokens" array of the tokens file, then send the daemon SIGHUP:\n${JSON.stringify(entry)}`);
  }
  return 0;
}

/**
 * `lspd jail ...` is the jail's own tool (src/cli/jail.ts, exporting
 * `runJailCli(argv): Promise<number>`). Loaded only when asked for, so the other
 * commands never load the jail, and a build without it still has a CLI.
 */
async function jail(argv: string[]): Promise<number> {
  const file = new URL('./jail.ts', import.meta.url);
  if (!existsSync(file)) throw new UsageError('lspd jail is not available in this build.');
  const mod = (await import(file.href)) as { runJailCli?: (a: string[]) => Promise<number> };
  if (typeof mod.runJailCli !== 'function') throw new UsageError('src/cli/jail.ts exports no runJailCli(argv).');
  return mod.runJailCli(argv);
}

const commands: Record<string, (argv: string[]) => Promise<number>> = { push, status, ask, lsp, rename, actions, show, diff, check, config, token, jail };

export async function run(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === '-h' || cmd === '--help' || cmd === 'help') {
    out(HELP);
    return cmd ? 0 : 2;
  }
  const f = commands[cmd];
  if (!f) {
    err(`lspd: unknown command ${JSON.stringify(cmd)}\n\n${HELP}`);
    return 2;
  }
  if (cmd !== 'jail' && (rest.includes('--help') || rest.includes('-h'))) {
    out(HELP);
    return 0;
  }
  try {
    return await f(rest);
  } catch (e) {
    if (e instanceof LspdError) {
      err(`lspd: ${e.message} (${e.code}${e.status ? `, HTTP ${e.status}` : ''})`);
      return 1;
    }
    if (e instanceof UsageError) {
      err(`lspd: ${e.message}`);
      return 2;
    }
    err(`lspd: ${(e as Error)?.message ?? String(e)}`);
    return 1;
  }
}

process.exitCode = await run(process.argv.slice(2));
