#!/usr/bin/env node
// Runs the TypeScript CLI directly (tsx), so `npx openclaw-rl ...` works from a fresh clone without a build.
// On the very first run nothing is installed yet: install it (scripts/setup.sh), then go on.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const installed = [
  'node_modules/tsx',
  'node_modules/@temporalio/worker',
  '.venv/bin/python',
  '.venv/bin/temporal',
];
if (!installed.every((path) => existsSync(`${root}/${path}`))) {
  console.error('openclaw-rl: first run, installing dependencies (scripts/setup.sh)...');
  const setup = spawnSync('bash', [`${root}/scripts/setup.sh`], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (setup.status !== 0) {
    console.error('openclaw-rl: setup failed; see the output above');
    process.exit(setup.status ?? 1);
  }
}

const { register } = await import('tsx/esm/api');
register();
await import('../cli/main.ts');
