// The `code_interpreter` tool: runs one Python program in the episode's sandbox (a fresh `python3` process
// per call, code on stdin, as the sandbox's unprivileged user, no network) and turns the result into the text
// the policy sees, cut to the configured length like the original (spec 10.4: result[:1024]).

import type { ToolSchema } from '../environment.js';
import type { ExecResult, Sandbox } from '../sandbox.js';

export const CODE_INTERPRETER_TOOL: ToolSchema = {
  type: 'function',
  function: {
    name: 'code_interpreter',
    description:
      'Runs a Python 3 program in a sandbox (numpy and sympy installed, no network) and returns what it ' +
      'printed. Each call starts a fresh interpreter: nothing is kept between calls, so print what you need.',
    parameters: {
      type: 'object',
      properties: { code: { type: 'string', description: 'The complete Python program to run.' } },
      required: ['code'],
    },
  },
};

export interface CodeRunLimits {
  timeoutMs: number;
  maxOutputChars: number;
}

export async function runPython(sandbox: Sandbox, code: string, limits: CodeRunLimits): Promise<string> {
  const result = await sandbox.exec(['python3', '-'], { timeoutMs: limits.timeoutMs, stdin: code });
  await killLeftovers(sandbox);
  return truncate(describeRun(result, limits.timeoutMs), limits.maxOutputChars);
}

/**
 * Ends whatever the program left running (a daemon, a process in a new session that the timeout's
 * process-group kill did not reach), so every call starts from a quiet sandbox as a fresh interpreter would.
 * `kill -1` as the sandbox user reaches only that user's processes: never the root-owned lease keeper.
 */
async function killLeftovers(sandbox: Sandbox): Promise<void> {
  await sandbox.exec(['sh', '-c', 'kill -KILL -1'], { timeoutMs: 5_000 });
}

/** Output first (stdout, then stderr such as a traceback), then what happened if it did not end normally. */
function describeRun(result: ExecResult, timeoutMs: number): string {
  const parts = [result.stdout.trimEnd(), result.stderr.trimEnd()].filter((part) => part.length > 0);
  if (result.timedOut)
    parts.push(`Error: the program ran longer than ${timeoutMs / 1000} s and was stopped.`);
  else if (result.exitCode === 137) parts.push('Error: the program was killed (out of memory?).');
  else if (result.exitCode !== 0 && result.stderr.trim().length === 0) {
    parts.push(`Error: the program exited with status ${result.exitCode}.`);
  }
  if (parts.length === 0) return '(no output: print() the values you want to see)';
  return parts.join('\n');
}

function truncate(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars)}…`;
}
