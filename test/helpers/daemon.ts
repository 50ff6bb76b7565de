// Start a real lspd for a test: as a child process (`spawnDaemon`, for tests that
// SIGKILL or signal it) with its own data dir and a free port on loopback.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

export const projectDir = resolve(import.meta.dirname, '..', '..');

export interface Daemon {
  url: string;
  dataDir: string;
  child: ChildProcess;
  /** Every JSON log line so far. */
  logs: Record<string, unknown>[];
  /** SIGTERM and wait; resolves with the exit code. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait. */
  kill(): Promise<void>;
  /** Remove the data dir (after stop/kill). */
  cleanup(): void;
}

export function tempDir(prefix = 'lspd-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Spawn `node --import tsx src/main.ts` on 127.0.0.1:0 and resolve once it logs "listening". */
export async function spawnDaemon(opts: { dataDir?: string; env?: Record<string, string>; timeoutMs?: number } = {}): Promise<Daemon> {
  const dataDir = opts.dataDir ?? tempDir();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: projectDir,
    // Warm-up off unless a test asks for it: tests count spawns and jailed pids
    // after uploads, and sessions nobody asked for would be in those counts (and
    // load the shared CI host); test/lsp-warm.test.ts turns it on.
    env: { ...process.env, LSPD_LISTEN: '127.0.0.1:0', LSPD_DATA: dataDir, LOG_LEVEL: 'info', LSPD_WARM_MAX_SESSIONS: '0', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((res) => child.once('exit', (code) => res(code)));
  const url = await new Promise<string>((res, rej) => {
    const timer = setTimeout(() => rej(new Error(`daemon did not start: ${stderr}`)), opts.timeoutMs ?? 30_000);
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const rec = JSON.parse(line) as Record<string, unknown>;
        logs.push(rec);
        if (rec.msg === 'listening') {
          clearTimeout(timer);
          res(String(rec.address));
        }
      } catch {
        /* not a log line */
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      rej(new Error(`daemon exited ${code} before listening: ${stderr}`));
    });
  });
  return {
    url,
    dataDir,
    child,
    logs,
    async stop() {
      child.kill('SIGTERM');
      return exited;
    },
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
    cleanup() {
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
