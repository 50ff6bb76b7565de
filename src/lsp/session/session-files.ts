// Files a server row generates for one session (clangd's compile_commands.json),
// written by the daemon into a fresh host directory of its own and bound read-only
// into the jail, file by file, at in-jail paths inside the session's private tmpfs
// (so the directory around them stays writable for the server: clangd keeps its
// index next to its compile_commands.json). Removed when the session's jail is gone;
// the whole base directory is wiped at start (createLsp), for what a crash left.
import { createWriteStream } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Bind } from '../../jail/types.js';
import { JAIL_HOME, JAIL_TMP } from '../../jail/layout.js';

/** A file's contents: text, or a stream of text written as it comes (a large generated file is never held whole). */
export type SessionFileBody = string | AsyncIterable<string>;

/** What a row generates for one session. */
export interface GeneratedFiles {
  /** In-jail absolute path (under HOME or TMP) → contents. */
  files: Readonly<Record<string, SessionFileBody>>;
  /**
   * What the generation left out or changed and why (a bound, a refused flag),
   * for the session's log and its answers; complete once every body was written.
   */
  notes: readonly string[];
}

/** A body as one string (for tests and bare benchmarks; the daemon streams it to disk). */
export async function bodyText(body: SessionFileBody): Promise<string> {
  if (typeof body === 'string') return body;
  let text = '';
  for await (const chunk of body) text += chunk;
  return text;
}

export interface SessionFiles {
  binds: Bind[];
  /** Idempotent; never throws. */
  remove(): Promise<void>;
}

/** `files`: in-jail absolute path (under HOME or TMP) → contents. */
export async function writeSessionFiles(baseDir: string, files: Readonly<Record<string, SessionFileBody>>): Promise<SessionFiles> {
  await mkdir(baseDir, { recursive: true });
  // Modes set explicitly, not through mkdir/writeFile: a umask like 077 would
  // leave them unreadable to the pool uids the jails run as.
  await chmod(baseDir, 0o755);
  const dir = await mkdtemp(join(baseDir, 's-'));
  let removed: Promise<void> | undefined;
  const remove = () => (removed ??= rm(dir, { recursive: true, force: true }).catch(() => undefined));
  try {
    // Readable by others (the jail's pool uids); they hold nothing secret.
    await chmod(dir, 0o755);
    const binds: Bind[] = [];
    let n = 0;
    for (const [at, text] of Object.entries(files)) {
      if (!(at.startsWith(`${JAIL_HOME}/`) || at.startsWith(`${JAIL_TMP}/`)) || at.includes('/../') || at.includes('\0')) {
        throw new Error(`session file ${at} is not inside the session's private tmpfs`);
      }
      const host = join(dir, `f${n++}`);
      if (typeof text === 'string') await writeFile(host, text);
      else await pipeline(Readable.from(text), createWriteStream(host));
      await chmod(host, 0o644);
      binds.push({ host, at });
    }
    return { binds, remove };
  } catch (err) {
    await remove();
    throw err;
  }
}
