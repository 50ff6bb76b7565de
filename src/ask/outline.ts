// Names declared in files whose server answers no workspace symbols (the CSS server:
// a class rule, an SCSS variable or mixin, a Less variable). workspaceSymbols leaves
// that server out, so /ask asks each file the bounded scan found mentioning the leaf
// for its document symbols instead and matches the name there. Which languages those
// are is what the servers say (workspaceSymbols of that language refused 422
// no_server), never a list kept here: a server that gains workspace symbols is asked
// for them.
import { isAppError } from '../errors.js';
import { languageOf, type Language } from '../languages.js';
import { chainOf, matchQualifiers, type ParsedName, type SymbolLike } from './name-match.js';
import type { AskContext, Range } from './types.js';
import type { RootKey } from '../api/schemas.js';
import { splitLines, wordColumns, type Encoding } from './text-scan.js';

export type OutlineSym = SymbolLike & { path: string; range: Range; selectionRange?: Range };

/** Does this language's server refuse workspace symbols? Asked once per language and resolution. */
export interface LacksSymbols {
  (language: Language): Promise<boolean>;
  /** What an answer already showed (workspaceSymbols of this language alone answered, or all of them refused). */
  know(language: Language, lacks: boolean): void;
}

export function lacksSymbolsOf(ctx: AskContext, root: RootKey, leaf: string, encoding: Encoding): LacksSymbols {
  const asked = new Map<Language, Promise<boolean>>();
  const lacks = (language: Language) => {
    let p = asked.get(language);
    if (!p) {
      p = ctx.lsp({ org: root.org, repo: root.repo, sha: root.sha, op: 'workspaceSymbols', query: leaf, languages: [language], encoding }).then(
        () => false,
        (err: unknown) => {
          if (isAppError(err) && err.code === 'no_server') return true;
          // A server that cannot start says nothing of what it answers: its files are not outlined, the rest goes on.
          if (isAppError(err) && err.code === 'server_unavailable') return false;
          throw err;
        },
      );
      asked.set(language, p);
    }
    return p;
  };
  return Object.assign(lacks, { know: (language: Language, v: boolean) => void asked.set(language, Promise.resolve(v)) });
}

const NAME_CHAR = /[\p{L}\p{N}_$@-]/u;

/**
 * How a document symbol's name fits the leaf asked: the name itself (`card-shadow`,
 * `$spacing`, `@primary`) or a selector of that one class, id or placeholder
 * (`.button`, `#main`, `%plain` for `button`, `main`, `plain`) is exact; a selector
 * naming it among others (`.button:hover`, `nav .button`) is loose.
 */
export function outlineFit(leaf: string, symbolName: string): 'exact' | 'loose' | undefined {
  if (symbolName === leaf) return 'exact';
  if (['.', '#', '%'].some((p) => symbolName === p + leaf)) return 'exact';
  for (let i = symbolName.indexOf(leaf); i > 0; i = symbolName.indexOf(leaf, i + 1)) {
    const after = symbolName[i + leaf.length];
    if ('.#%'.includes(symbolName[i - 1]!) && (after === undefined || !NAME_CHAR.test(after))) return 'loose';
  }
  return undefined;
}

export interface Outlined {
  exact: OutlineSym[];
  loose: OutlineSym[];
  /** Some file's outline was answered: the server works, the name is not declared there. */
  answered: boolean;
  /**
   * Where a custom property (`--x`, no symbol to the CSS server) is declared (`--x:`),
   * in UTF-16 columns: probes to ask before its uses, which a server without an index
   * across files resolves only in the declaring file.
   */
  declared: { path: string; line: number; character: number }[];
  notes: string[];
}

/**
 * The document symbols that declare `name` in `files` (the scan's, in its order) whose
 * language's server has no workspace symbols; at most limits.maxOutlineFiles files
 * asked, the cut said in `notes`. `covered`: languages some workspace symbol came from
 * (their server answered; nothing to ask).
 */
export async function fromOutlines(
  ctx: AskContext,
  root: RootKey,
  name: ParsedName,
  encoding: Encoding,
  files: readonly string[],
  covered: ReadonlySet<Language>,
  lacks: LacksSymbols,
): Promise<Outlined> {
  const out: Outlined = { exact: [], loose: [], answered: false, declared: [], notes: [] };
  const langs = new Map<string, Language>();
  for (const f of files) {
    const l = languageOf(f)?.language;
    if (l !== undefined && !covered.has(l)) langs.set(f, l);
  }
  const without = new Set<Language>();
  for (const l of new Set(langs.values())) if (await lacks(l)) without.add(l);
  const asked = files.filter((f) => without.has(langs.get(f)!));
  const max = ctx.limits.maxOutlineFiles;
  if (asked.length > max)
    out.notes.push(
      `${asked.length} files whose server has no workspace symbols mention ${JSON.stringify(name.leaf)}; the outlines of the first ${max} were searched.`,
    );
  await ctx.map(asked.slice(0, max), async (path) => {
    let symbols: OutlineSym[];
    try {
      const a = await ctx.lsp({ org: root.org, repo: root.repo, sha: root.sha, op: 'documentSymbols', path, query: name.leaf, encoding });
      symbols = ((a.symbols ?? []) as OutlineSym[]).filter((x) => x.range !== undefined).map((x) => ({ ...x, path }));
    } catch (err) {
      // One file the server cannot outline (too large, not UTF-8) leaves the others' answer.
      if (!isAppError(err) || !['no_such_file', 'file_too_large', 'not_utf8', 'no_server', 'server_unavailable'].includes(err.code)) throw err;
      return;
    }
    out.answered = true;
    if (name.leaf.startsWith('--')) {
      const lines = splitLines((await ctx.readText(root, path)) ?? '');
      lines.forEach((line, n) => {
        for (const c of wordColumns(line, name.leaf)) if (/^\s*:/.test(line.slice(c + name.leaf.length))) out.declared.push({ path, line: n, character: c });
      });
    }
    for (const x of symbols) {
      const fit = outlineFit(name.leaf, x.name);
      if (fit === undefined) continue;
      const q = matchQualifiers(name.qualifiers, chainOf({ ...x, name: name.leaf }));
      if (q.fit === 'none') continue;
      (fit === 'exact' && q.fit === 'exact' ? out.exact : out.loose).push(x);
    }
  });
  // ctx.map runs files in any order; the answer must not depend on it.
  const order = (a: OutlineSym, b: OutlineSym) => a.path.localeCompare(b.path) || a.range.start.line - b.range.start.line;
  out.exact.sort(order);
  out.declared.sort((a, b) => a.path.localeCompare(b.path) || a.line - b.line);
  out.loose.sort(order);
  return out;
}
