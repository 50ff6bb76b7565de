// The questions bench/monorepo asks of a tree, as data: the generated monorepo makes
// one, a real repository's comes from a JSON file (bench/monorepo-playwright.json).
// Positions are found by text (the first `needle` in the file, plus `offset`), never
// by numbers that drift with the repository.
import { readFileSync } from 'node:fs';
import { extract } from 'tar-stream';
import { Readable } from 'node:stream';

export interface Probe {
  path: string;
  needle: string;
  /** Characters into the needle (default 0). */
  offset?: number;
}

export interface Spec {
  /** A definition the tree alone answers (through a tsconfig `paths` alias): right when a location is expect.path at the line of expect.needle. */
  inTree: Probe & { expect: { path: string; needle: string } };
  /** A definition that lands in a fetched package: right when a location is `external` in `module`. */
  dependency: Probe & { module: string };
  /** The file each one-file commit changes (a comment line appended: positions above it stay). */
  oneFile: string;
  /** A name only files of one language mention: /ask locate lands in expectPath and starts `server` alone. */
  ask: { symbol: string; expectPath: string; server: string };
}

export function loadSpec(file: string): Spec {
  return JSON.parse(readFileSync(file, 'utf8')) as Spec;
}

/** The paths whose text the spec's positions and checks need. */
export function specPaths(s: Spec): string[] {
  return [...new Set([s.inTree.path, s.inTree.expect.path, s.dependency.path, s.oneFile])];
}

/** Zero-based line/character (UTF-16, LSP's default) of the first needle in text, plus offset. */
export function positionOf(text: string, needle: string, offset = 0, what = needle): { line: number; character: number } {
  const i = text.indexOf(needle);
  if (i < 0) throw new Error(`"${needle}" is not in ${what}`);
  const before = text.slice(0, i + offset).split('\n');
  return { line: before.length - 1, character: before[before.length - 1]!.length };
}

/** The named regular files of a tar (git archive output), as text. */
export async function filesFromTar(tar: Buffer, wanted: readonly string[]): Promise<Map<string, string>> {
  const want = new Set(wanted);
  const out = new Map<string, string>();
  const x = extract();
  const done = new Promise<void>((res, rej) => {
    x.on('entry', (header, stream, next) => {
      const name = header.name.replace(/^\.\//, '');
      const chunks: Buffer[] = [];
      stream.on('data', (c: unknown) => {
        if (want.has(name)) chunks.push(c as Buffer);
      });
      stream.on('end', () => {
        if (want.has(name) && header.type === 'file') out.set(name, Buffer.concat(chunks).toString('utf8'));
        next();
      });
      stream.resume();
    });
    x.on('finish', () => res());
    x.on('error', rej);
  });
  Readable.from([tar]).pipe(x);
  await done;
  for (const w of want) if (!out.has(w)) throw new Error(`${w} is not a file of the tar`);
  return out;
}
