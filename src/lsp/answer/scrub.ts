// Scrubbing host paths out of text a language server wrote (hover markdown,
// diagnostic messages, window/showMessage text, stderr tails) before it leaves the
// daemon. API.md: "No host path ever leaves the daemon"; DESIGN.md "Bounds".
//
// What goes, and what it becomes:
// - known host paths the caller passes (data dir, install dir, …), found anywhere,
//   even inside a URL or a word, raw or percent-encoded, in any letter case → `<path>`;
//   the root's own tree directory → treated as the in-jail /src (so root-relative).
// - `file:` URIs → root-relative when inside the tree (a `#L12` fragment is kept),
//   `module@version/path` inside a Go dependency, `node_modules/name/path` inside an
//   npm one, else `<path>`. Percent-decoded once, `..` refused (paths.ts).
// - absolute POSIX paths whose first segment is a system or home root (/home, /root,
//   /tmp, /Users, /proc, /etc, /usr, /opt, /var, …, and the jail's /src and /deps), or
//   that look like a file (two or more segments, the last with an extension) → mapped
//   like file URIs. Other absolute-looking text stays: `/api/users`, `a / b`, `// x`,
//   regexes. That is the trade-off: a route string in a hover is not a host path.
// - `~/…`, `~user/…` and a bare `~user` word; Windows drive paths (`C:\…`, `C:/…`);
//   UNC paths (`\\server\share`); `%2F`-encoded and JSON-escaped (`\/home\/x`) absolute paths.
// - A quoted string (" ' `) that starts like a path is taken whole up to its closing
//   quote on the same line, so a path with spaces goes in one piece.
// - A path glued to a command-line option (`-I/usr/include`, `-B/opt/cross/bin`,
//   `@/home/ci/args.rsp`): lspd's own notes quote a compile database's arguments, and
//   compilers and servers print them so; the path after the option is scrubbed as above.
// What stays: URLs with an authority (`https://host/…`), path parts included, so
// documentation links survive; markdown link text. A `scheme:///path` URL (no
// authority, so no documentation) has its path scrubbed.
//
// Limits, said plainly: this stops accidental and simple leaks. A hostile server can
// always encode a path some other way (base64, letter by letter); the real defence
// is that the jail shows a server no host path except the ones named in knownPaths.
//
// Linear time on any input, by construction: one left-to-right scan that never
// revisits a consumed token; bounded sticky regexes only; trailing-punctuation and
// closing-quote searches are manual scans (an end-anchored regex such as /[.:]+$/
// is quadratic on a long run of ':' followed by another character).
import { classify } from './coordinates.js';
import { fileUriToJailPath, isUnder, normalizeJailPath, percentDecode } from './paths.js';
import { DEPS_AT, TREE_AT } from '../../jail/layout.js';

export const PATH_PLACEHOLDER = '<path>';

export interface ScrubOptions {
  /** Host directories holding this root's tree: a path inside one is shown root-relative. */
  treeHostDirs?: readonly string[];
  /** Other host paths to hide wherever they appear (data dir, daemon install dir, HOME). */
  knownPaths?: readonly string[];
}

/** First segments of absolute paths that are always host (or jail) paths. */
const SENSITIVE_ROOTS = new Set([
  'home',
  'root',
  'Users',
  'tmp',
  'var',
  'etc',
  'proc',
  'sys',
  'dev',
  'usr',
  'opt',
  'nix',
  'private',
  'mnt',
  'srv',
  'run',
  'snap',
  'lib',
  'lib32',
  'lib64',
  'libx32',
  'bin',
  'sbin',
  'boot',
  'media',
  'data',
  'app',
  'work',
  'workspace',
  'workspaces',
  'build',
  'builds',
  'runner',
  'cache',
  'Library',
  'Volumes',
  'System',
  'Applications',
  'gnu',
  'lost+found',
  'src',
  'deps',
]);

const QUOTE_SCAN_MAX = 4096;
const T = new Uint8Array(128);
const mark = (chars: string, bit: number) => {
  for (let k = 0; k < chars.length; k++) T[chars.charCodeAt(k)]! |= bit;
};
const CONTROLS = String.fromCharCode(...Array.from({ length: 0x20 }, (_, k) => k));
// 1: characters that end a bare path token.
mark(' \t\n\r\f\v"\'`<>|()[]{},;*\x7f' + CONTROLS, 1);
// 2: characters after which a path cannot start (it would be the middle of a word or path).
mark('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-~/\\%+@$#&', 2);
// 4: characters that end a URL (parentheses are balanced separately).
mark(' \t\n\r\f\v"\'`<>|\\^{}' + CONTROLS, 4);

/** Unicode white space outside ASCII (what \s matches there). */
const isSpace = (c: number) =>
  c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
const endsPath = (c: number) => (c < 128 ? (T[c]! & 1) !== 0 : isSpace(c));
const inWord = (c: number) => (c < 128 ? (T[c]! & 2) !== 0 : !isSpace(c));
const endsUrl = (c: number) => (c < 128 ? (T[c]! & 4) !== 0 : isSpace(c));
const isLetter = (c: number) => (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
const isTrailingPunct = (c: number) => c === 46 || c === 44 || c === 59 || c === 58 || c === 33 || c === 63; // . , ; : ! ?

const escapeRe = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const REST_OF_PATH = '(?![A-Za-z0-9._~-])[^\\s"\'`<>|()\\[\\]{},;*]*';
const SCHEME = /[A-Za-z][A-Za-z0-9+.-]{1,31}:/y;
/**
 * Text with no `/ \ % ~ : - @` and no quote: no path, URI, drive, option or quoted
 * token can start in it, so it is returned as is (most symbol names and containers).
 */
const PLAIN = /^[\w$ .,;()<>[\]{}=|&!?*+]*$/;
const LINE_FRAGMENT = /^#L\d{1,9}(?:[,:C]\d{1,9})?(?:-L?\d{1,9}(?:[,:C]\d{1,9})?)?$/;
const HOME_USER = /~[a-z_][a-z0-9_.-]{0,31}/y;
const HOME_TOKEN = /^~(?:\/|[a-z_][a-z0-9_.-]{1,31}(?:\/|$))/;
/** A command-line option a path may be glued to: `-I`, `--sysroot`, `-fplugin-arg-x` (bounded: linear scanning). */
const OPTION_PREFIX = /-{1,2}[A-Za-z][A-Za-z0-9_-]{0,40}/y;

interface Hit {
  /** Where the replaced part starts (default: the scan position). */
  from?: number;
  /** Where scanning resumes. */
  end: number;
  /** Replacement of text[from, end); undefined leaves it as it is. */
  text?: string;
}

/** Index after the token that starts at i and ends at the first `stop` char. */
function tokenEnd(s: string, i: number, stop: (c: number) => boolean): number {
  let j = i;
  while (j < s.length && !stop(s.charCodeAt(j))) j++;
  return j;
}

/** Index after a URL starting at i: ends at a URL terminator or an unbalanced ) or ]. */
function urlEnd(s: string, i: number): number {
  let depth = 0;
  let j = i;
  for (; j < s.length; j++) {
    const c = s.charCodeAt(j);
    if (endsUrl(c)) break;
    if (c === 40) depth++;
    else if (c === 41) {
      if (depth === 0) break;
      depth--;
    } else if (c === 93 && depth === 0) break;
  }
  return j;
}

/** Back off trailing sentence punctuation from a token [i, j). */
function trimPunct(s: string, i: number, j: number): number {
  while (j > i && isTrailingPunct(s.charCodeAt(j - 1))) j--;
  return j;
}

export type Scrubber = (text: string) => string;

/** Build a scrubber once per root (the known-path patterns are compiled here). */
export function createScrubber(opts: ScrubOptions = {}): Scrubber {
  const clean = (ps: readonly string[] | undefined) => (ps ?? []).map((p) => normalizeJailPath(p)).filter((p): p is string => p !== undefined && p !== '/');
  const trees = clean(opts.treeHostDirs).sort((a, b) => b.length - a.length);
  const known = clean(opts.knownPaths).sort((a, b) => b.length - a.length);
  const encoded = (p: string) => [encodeURIComponent(p), p.split('/').map(encodeURIComponent).join('/')];
  const treeRaw = trees.length ? new RegExp(`(?:${trees.map(escapeRe).join('|')})(?![A-Za-z0-9._~-])`, 'gi') : undefined;
  const hide = [...known, ...known.flatMap(encoded), ...trees.flatMap(encoded)].filter((p, i, a) => a.indexOf(p) === i);
  hide.sort((a, b) => b.length - a.length);
  // a `file://` in front goes with the path: `file://<path>` would read as a URI to nowhere
  const hideRe = hide.length ? new RegExp(`(?:file:(?://(?:localhost)?)?)?(?:${hide.map(escapeRe).join('|')})${REST_OF_PATH}`, 'gi') : undefined;

  /** Render a normalized absolute path: root-relative, a dependency coordinate, or <path>. */
  function renderAbsolute(p: string): string {
    for (const t of trees) if (isUnder(p, t)) return p === t ? '.' : p.slice(t.length + 1);
    for (const k of known) if (isUnder(p, k)) return PATH_PLACEHOLDER;
    if (isUnder(p, TREE_AT)) return p === TREE_AT ? '.' : p.slice(TREE_AT.length + 1);
    if (isUnder(p, DEPS_AT)) {
      const c = classify(p);
      if (c.kind === 'external') return `${c.module}@${c.version}/${c.path}`;
      if (c.kind === 'npm') return `node_modules/${c.module}/${c.path}`;
    }
    return PATH_PLACEHOLDER;
  }

  /** A POSIX path token: its replacement, or undefined when it is not one we scrub. */
  function posix(token: string): string | undefined {
    // keep a :line or :line:col suffix
    let end = token.length;
    for (let k = 0; k < 2; k++) {
      let d = end;
      while (d > 0 && token.charCodeAt(d - 1) >= 48 && token.charCodeAt(d - 1) <= 57) d--;
      if (d < end && d > 0 && token[d - 1] === ':') end = d - 1;
      else break;
    }
    const core = token.slice(0, end);
    const suffix = token.slice(end);
    let s = 0;
    while (s < core.length && core[s] === '/') s++;
    const slash = core.indexOf('/', s);
    const first = core.slice(s, slash < 0 ? core.length : slash);
    const lastSeg = core.slice(core.lastIndexOf('/') + 1);
    const dot = lastSeg.lastIndexOf('.');
    const ext = lastSeg.slice(dot + 1);
    const fileLike = s === 1 && slash > 0 && dot > 0 && ext.length >= 1 && ext.length <= 10 && /^[A-Za-z0-9]+$/.test(ext);
    if (first === '' || (!SENSITIVE_ROOTS.has(first) && !fileLike)) return undefined;
    const p = normalizeJailPath(core);
    return (p === undefined ? PATH_PLACEHOLDER : renderAbsolute(p)) + suffix;
  }

  function fileUri(token: string): string {
    const hash = token.indexOf('#');
    const frag = hash < 0 ? '' : token.slice(hash);
    const p = fileUriToJailPath(hash < 0 ? token : token.slice(0, hash));
    if (p === undefined) return PATH_PLACEHOLDER;
    const out = renderAbsolute(p);
    return out !== PATH_PLACEHOLDER && LINE_FRAGMENT.test(frag) ? out + frag : out;
  }

  /** Replacement for a path-like token of any kind, or undefined to keep it. */
  function anyPath(token: string): string | undefined {
    const c = token.charCodeAt(0);
    if (/^file:/i.test(token)) return fileUri(token);
    if (c === 47 /* / */) return posix(token);
    if (c === 126 /* ~ */) return HOME_TOKEN.test(token) ? PATH_PLACEHOLDER : undefined;
    if (c === 92 /* \ */) return token.startsWith('\\\\') ? PATH_PLACEHOLDER : undefined;
    if (/^[A-Za-z]:[\\/]/.test(token)) return PATH_PLACEHOLDER;
    if (/^%2f/i.test(token)) {
      const d = percentDecode(token);
      return d === undefined || !d.startsWith('/') ? PATH_PLACEHOLDER : (posix(d) ?? token);
    }
    return undefined;
  }

  function scan(s: string): string {
    const out: string[] = [];
    let last = 0;
    let forced = -1; // a position that counts as a boundary (after `scheme://`)
    let quoteScanned: Map<number, number> | undefined; // quote char -> no such quote in (…, value); made at the first quote
    const n = s.length;
    let i = 0;
    while (i < n) {
      const c = s.charCodeAt(i);
      if (i > 0 && i !== forced && inWord(s.charCodeAt(i - 1))) {
        i++;
        continue;
      }
      let hit: Hit | undefined;
      if (c === 45 /* - */ || c === 64 /* @ */) {
        // an option with a path glued on: the path's '/' counts as a boundary
        let j = i + 1;
        if (c === 45) {
          OPTION_PREFIX.lastIndex = i;
          j = OPTION_PREFIX.exec(s) ? OPTION_PREFIX.lastIndex : i;
        }
        if (j > i && s.charCodeAt(j) === 47) {
          forced = j;
          hit = { end: j };
        }
      } else if (c === 34 || c === 39 || c === 96) hit = quoted(s, i, c, (quoteScanned ??= new Map()));
      else if (c === 47 || c === 37 /* % */) {
        const j = tokenEnd(s, i, endsPath);
        const k = trimPunct(s, i, j);
        const r = c === 37 && !/^%2f/i.test(s.slice(i, i + 3)) ? undefined : anyPath(s.slice(i, k));
        hit = { end: r === undefined ? j : k, text: r };
      } else if (c === 126) {
        hit = home(s, i);
      } else if (c === 92 && s.charCodeAt(i + 1) === 47) {
        // a JSON-escaped path (\/home\/alice) in text a server copied from JSON
        const j = tokenEnd(s, i, endsPath);
        const k = trimPunct(s, i, j);
        const r = posix(s.slice(i, k).replace(/\\\//g, '/'));
        hit = { end: r === undefined ? j : k, text: r };
      } else if (c === 92 && s.charCodeAt(i + 1) === 92) {
        const j = tokenEnd(s, i, endsPath);
        hit = j > i + 2 ? { end: trimPunct(s, i, j), text: PATH_PLACEHOLDER } : { end: j };
      } else if (isLetter(c)) {
        const c1 = s.charCodeAt(i + 1);
        const c2 = s.charCodeAt(i + 2);
        if (c1 === 58 && (c2 === 92 || c2 === 47)) {
          hit = { end: trimPunct(s, i, tokenEnd(s, i, endsPath)), text: PATH_PLACEHOLDER };
        } else {
          SCHEME.lastIndex = i;
          const m = SCHEME.exec(s);
          if (m) {
            const afterColon = i + m[0].length;
            const scheme = m[0].slice(0, -1).toLowerCase();
            if (scheme === 'file') {
              const k = trimPunct(s, i, urlEnd(s, afterColon));
              hit = { end: k, text: fileUri(s.slice(i, k)) };
            } else if (s.startsWith('//', afterColon)) {
              if (s.charCodeAt(afterColon + 2) === 47) {
                forced = afterColon + 2; // scheme:///path: no authority, so no documentation; scrub its path
                hit = { end: forced };
              } else hit = { end: trimPunct(s, i, urlEnd(s, afterColon)) };
            } else hit = { end: afterColon }; // `Error:` or `mailto:`; what follows is scanned
          }
        }
      }
      if (hit === undefined) {
        i++;
        continue;
      }
      if (hit.text !== undefined) {
        out.push(s.slice(last, hit.from ?? i), hit.text);
        last = hit.end;
      }
      i = Math.max(hit.end, i + 1);
    }
    if (last === 0) return s;
    out.push(s.slice(last));
    return out.join('');
  }

  function quoted(s: string, i: number, q: number, scanned: Map<number, number>): Hit | undefined {
    const c = s.charCodeAt(i + 1);
    const startsPath = c === 47 || c === 126 || c === 92 || c === 37 || (isLetter(c) && (s.charCodeAt(i + 2) === 58 || /^file:/i.test(s.slice(i + 1, i + 6))));
    if (!startsPath) return undefined;
    // find the closing quote on this line; every character is looked at once per quote kind
    const limit = Math.min(s.length, i + 1 + QUOTE_SCAN_MAX);
    let j = Math.max(i + 1, scanned.get(q) ?? 0);
    let close = -1;
    for (; j < limit; j++) {
      const d = s.charCodeAt(j);
      if (d === q) {
        close = j;
        break;
      }
      if (d === 10 || d === 13) break;
    }
    scanned.set(q, j);
    if (close < 0) return undefined;
    const inner = s.slice(i + 1, close);
    const r = anyPath(inner);
    if (r === undefined) return undefined;
    return { from: i + 1, end: close, text: r };
  }

  function home(s: string, i: number): Hit | undefined {
    if (i > 0 && s.charCodeAt(i - 1) === 126) return undefined; // ~~strike~~
    const next = s.charCodeAt(i + 1);
    if (next === 47) return { end: trimPunct(s, i, tokenEnd(s, i, endsPath)), text: PATH_PLACEHOLDER };
    HOME_USER.lastIndex = i;
    const m = HOME_USER.exec(s);
    if (!m) return undefined;
    const after = i + m[0].length;
    const a = s.charCodeAt(after);
    if (a === 47) return { end: trimPunct(s, i, tokenEnd(s, i, endsPath)), text: PATH_PLACEHOLDER };
    // a bare `~user` word: only between spaces, quotes or the ends, so `~x;` (bitwise not) stays
    const prevOk = i === 0 || /[\s"'`]/.test(s[i - 1]!);
    const nextOk = after >= s.length || /[\s"'`]/.test(s[after]!);
    return prevOk && nextOk && m[0].length > 2 ? { end: after, text: PATH_PLACEHOLDER } : undefined;
  }

  return (text: string): string => {
    if (typeof text !== 'string' || text === '') return '';
    if (PLAIN.test(text)) return text;
    let s = text;
    // the tree first: the data dir (a known path) usually contains it
    if (treeRaw) s = s.replace(treeRaw, TREE_AT);
    if (hideRe) s = s.replace(hideRe, PATH_PLACEHOLDER);
    return scan(s);
  };
}

/** One-off scrub; prefer createScrubber when scrubbing many texts for one root. */
export function scrub(text: string, opts: ScrubOptions = {}): string {
  return createScrubber(opts)(text);
}
