// What SGLang would parse when started by a command line the project builds (`python3 -c <launcher> <args>`,
// engines/sglang-keyed-launch.ts): the command runs here over a double of `sglang.launch_server`
// (test/fixtures/sglang-launch-double), which reports the sys.argv[1:] the real module hands its parser.

import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

export const SGLANG_LAUNCH_DOUBLE = join(import.meta.dirname, '../fixtures/sglang-launch-double');

/** The arguments `sglang.launch_server` would parse, the key the launcher added included. */
export function sglangArgvOf(command: readonly string[], env: Record<string, string>): string[] {
  const [program, ...args] = command;
  const result = spawnSync(program ?? 'python3', args, {
    env: { PATH: process.env.PATH ?? '', PYTHONPATH: SGLANG_LAUNCH_DOUBLE, ...env },
    input: '',
    encoding: 'utf8',
  });
  if (result.status !== 0) throw new Error(`${command.slice(0, 2).join(' ')} failed: ${result.stderr}`);
  return (JSON.parse(result.stdout.split('\n')[0] ?? '') as { argv: string[] }).argv;
}
