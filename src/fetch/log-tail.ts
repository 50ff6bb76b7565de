// The bounded tail of a fetch's output that GET /v1/roots/... shows. Fetchers
// print whatever they like (npm's error dumps run to megabytes), so only the last
// `maxBytes` are kept, and every known host directory is replaced by a label
// before the text leaves: a caller learns what failed, never where lspd keeps files.

export class LogTail {
  private text = '';
  private readonly labels: [string, string][];

  /** `hostDirs`: host path → label, e.g. the root's deps dir → '<deps>'. Longest paths are replaced first. */
  constructor(
    private readonly maxBytes: number,
    hostDirs: Record<string, string> = {},
  ) {
    this.labels = Object.entries(hostDirs)
      .filter(([p]) => p.length > 1)
      .sort((a, b) => b[0].length - a[0].length);
  }

  append(chunk: string): void {
    this.text += chunk;
    // Trim at twice the bound so appends stay amortised O(1); tail() cuts exactly.
    if (this.text.length > 2 * this.maxBytes) this.text = this.text.slice(-this.maxBytes);
  }

  line(s: string): void {
    if (this.text !== '' && !this.text.endsWith('\n')) this.text += '\n';
    this.append(s.endsWith('\n') ? s : s + '\n');
  }

  /** `s` with every known host directory replaced by its label, as the tail shows it (a step's reason quotes the same errors). */
  label(s: string): string {
    let t = s;
    for (const [p, label] of this.labels) t = t.split(p).join(label);
    return scrubHome(t);
  }

  tail(): string {
    let t = this.label(this.text);
    if (Buffer.byteLength(t) <= this.maxBytes) return t;
    // Cut on a character boundary: slice the string, not the bytes, then re-check.
    let cut = t.slice(-this.maxBytes);
    while (Buffer.byteLength(cut) > this.maxBytes) cut = cut.slice(1);
    const nl = cut.indexOf('\n');
    return '…' + (nl >= 0 && nl < 200 ? cut.slice(nl) : cut);
  }
}

/** Home directories of the host, should a toolchain ever print one. */
function scrubHome(t: string): string {
  return t.replace(/(^|[\s"'(=:])\/(?:home\/[^/\s"']+|root)(?=[/\s"')]|$)/gm, '$1<home>');
}
