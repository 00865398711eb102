// The swe kind's one tool, `bash`: runs one command with `bash -lc` in the repository (/testbed), stderr
// merged into stdout as a terminal shows them, under a timeout (spec 10.3: 180 s; a timeout answers
// returncode -1 with whatever was printed). Each command runs in a new shell: nothing but files persists.

import type { ToolSchema } from '../environment.js';
import type { Sandbox } from '../sandbox.js';
import type { CommandOutcome } from './swe-observation.js';

export const BASH_TOOL: ToolSchema = {
  type: 'function',
  function: {
    name: 'bash',
    description:
      'Runs one bash command (or several joined with && or ||) in a new shell in the repository and ' +
      'returns its exit status and output. Directory changes and variables do not carry over to the next ' +
      'command. Use non-interactive commands only.',
    parameters: {
      type: 'object',
      properties: { command: { type: 'string', description: 'The command to run.' } },
      required: ['command'],
    },
  },
};

/** Keeps pagers and progress bars out of the output, as mini-swe-agent does. */
const COMMAND_ENV: Record<string, string> = {
  PAGER: 'cat',
  MANPAGER: 'cat',
  GIT_PAGER: 'cat',
  LESS: '-R',
  PIP_PROGRESS_BAR: 'off',
  TQDM_DISABLE: '1',
};

export interface BashRunOptions {
  workdir: string;
  timeoutMs: number;
}

/** Runs `command` as the sandbox's user; the outer shell merges stderr into stdout, then starts a login shell. */
export async function runBash(
  sandbox: Sandbox,
  command: string,
  options: BashRunOptions,
): Promise<CommandOutcome> {
  const result = await sandbox.exec(['bash', '-c', 'exec 2>&1; exec bash -lc "$1"', 'bash', command], {
    timeoutMs: options.timeoutMs,
    workdir: options.workdir,
    env: COMMAND_ENV,
  });
  const output = result.stdout + result.stderr;
  if (result.timedOut) {
    const note = `Command timed out after ${Math.round(options.timeoutMs / 1000)} s`;
    return { returncode: -1, output: output.length > 0 ? `${output}\n${note}` : note };
  }
  return { returncode: result.exitCode ?? -1, output };
}
