#!/usr/bin/env node
// The `lspd` command: runs src/cli/main.ts from source under tsx, the same way
// `npm start` runs the daemon (lspd ships no compiled dist/). Registering tsx's
// loader in this process is what `node --import tsx` does, without a second Node
// process between the shell and the CLI (signals and exit codes stay direct).
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
