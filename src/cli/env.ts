// The CLI's environment: the one place in src/cli that reads process.env. The
// daemon's rule ("only config.ts reads process.env") is about one validated,
// frozen configuration for a long-running service; the CLI is a client run by a
// person or a CI job, and LSPD_URL / LSPD_TOKEN are how CI hands it a secret
// without putting it on a command line (where `ps` would show it). It still goes
// through a small zod schema, so a bad value fails with the variable's name.
import { z } from 'zod';

const cliEnvSchema = z.object({
  LSPD_URL: z.url().default('http://127.0.0.1:7420').describe('Base URL of the daemon.'),
  LSPD_TOKEN: z.string().min(1).optional().describe('Bearer token (prefer this to --token: argv is visible to other users).'),
  LSPD_ORG: z.string().min(1).optional().describe('Default org when it cannot be derived from the git remote.'),
});

export type CliEnv = z.infer<typeof cliEnvSchema>;

export function readCliEnv(env: NodeJS.ProcessEnv = process.env): CliEnv {
  const picked = Object.fromEntries(
    Object.keys(cliEnvSchema.shape)
      .map((k) => [k, env[k]] as const)
      .filter(([, v]) => v !== undefined && v !== ''),
  );
  const r = cliEnvSchema.safeParse(picked);
  if (!r.success) {
    const i = r.error.issues[0]!;
    throw new Error(`${String(i.path[0])}: ${i.message}`);
  }
  return r.data;
}
