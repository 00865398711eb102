// The tools the policy drives the task's container with, named as CAMEL's TerminalToolkit names them (spec
// 10.1): `shell_exec` runs one command to completion in a fresh bash (blocking, with a timeout) and returns its
// output and exit status, clipped head and tail, or with `block: false` starts it in the background under an
// id; `shell_view` shows such a process's output and `shell_write_to_process` sends it a line of input
// (terminal-processes.ts keeps them in the container); `shell_write_content_to_file` writes a file. All run as
// the sandbox's user.
//
// A tool that does not exist answers `[TOOL_ERROR] unknown tool: <name>`; a call that fails (bad arguments,
// a container error) answers `[TOOL_ERROR] <name>: <Type>: <message>`, as the original's worker did.

import { clipMiddle } from '../../core/clip-middle.js';
import type { ToolCallAction, ToolSchema } from '../environment.js';
import type { Sandbox } from '../sandbox.js';
import { checkSessionId, startProcess, viewProcess, writeToProcess } from './terminal-processes.js';

export const SHELL_EXEC = 'shell_exec';
export const SHELL_VIEW = 'shell_view';
export const SHELL_WRITE_TO_PROCESS = 'shell_write_to_process';
export const SHELL_WRITE_CONTENT_TO_FILE = 'shell_write_content_to_file';

const ID_PARAMETER = {
  type: 'string',
  description: 'The id of a background process (letters, digits, ".", "_", "-"), chosen when it was started.',
};

export const TERMINAL_TOOLS: ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: SHELL_EXEC,
      description:
        'Runs a shell command in the task container with bash and waits for it to finish; returns its ' +
        'combined stdout and stderr and its exit code. Each call starts a fresh shell in the default working ' +
        'directory (environment changes and `cd` do not carry over), so use absolute paths. Long outputs are ' +
        'cut in the middle; a blocking command that runs past its timeout is killed. With block=false the ' +
        'command runs in the background under `id` (for servers and interactive programs): read its output ' +
        'with shell_view and type into it with shell_write_to_process.',
      parameters: {
        type: 'object',
        properties: {
          command: { type: 'string', description: 'The bash command(s) to run.' },
          block: {
            type: 'boolean',
            description: 'Wait for the command to finish (default true); false runs it in the background.',
          },
          id: { ...ID_PARAMETER, description: 'With block=false: the id to give the background process.' },
          timeout: {
            type: 'number',
            description: 'Blocking only: seconds to wait before the command is killed (default 20).',
          },
        },
        required: ['command'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: SHELL_VIEW,
      description:
        'Shows the output of a background process started with shell_exec(block=false) so far, and whether it ' +
        'is still running or exited (with its exit code).',
      parameters: { type: 'object', properties: { id: ID_PARAMETER }, required: ['id'] },
    },
  },
  {
    type: 'function',
    function: {
      name: SHELL_WRITE_TO_PROCESS,
      description:
        'Sends one line of input (a newline is added) to a running background process, then shows its output.',
      parameters: {
        type: 'object',
        properties: {
          id: ID_PARAMETER,
          command: { type: 'string', description: 'The line to type into the process.' },
        },
        required: ['id', 'command'],
      },
    },
  },
  {
    type: 'function',
    function: {
      name: SHELL_WRITE_CONTENT_TO_FILE,
      description:
        'Writes `content` to the file at `file_path` (an absolute path), creating missing parent folders and ' +
        'replacing the file if it exists. Use it for scripts and configuration files instead of shell quoting.',
      parameters: {
        type: 'object',
        properties: {
          content: { type: 'string', description: 'The complete file content.' },
          file_path: { type: 'string', description: 'Absolute path of the file to write.' },
        },
        required: ['content', 'file_path'],
      },
    },
  },
];

export interface TerminalToolLimits {
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
  maxOutputChars: number;
  /** When the agent time limit ends (epoch ms): no blocking command runs past it. */
  deadline?: number;
}

/** A call's arguments were not what the tool needs (reported as `ValueError`, as CAMEL's Python would). */
class ToolArgumentError extends Error {
  override name = 'ValueError';
}

/** Runs one tool call and returns the observation; never throws. */
export async function runTerminalTool(
  sandbox: Sandbox,
  action: ToolCallAction,
  limits: TerminalToolLimits,
): Promise<string> {
  try {
    const args = action.arguments;
    if (action.name === SHELL_EXEC && args.block === false) {
      const command = requireCommand(args.command);
      return clipMiddle(await startProcess(sandbox, checkSessionId(args.id), command), limits.maxOutputChars);
    }
    if (action.name === SHELL_EXEC) return await shellExec(sandbox, args, limits);
    if (action.name === SHELL_VIEW)
      return clipMiddle(await viewProcess(sandbox, checkSessionId(args.id)), limits.maxOutputChars);
    if (action.name === SHELL_WRITE_TO_PROCESS) {
      if (typeof args.command !== 'string') throw new ToolArgumentError('"command" must be a string');
      const output = await writeToProcess(sandbox, checkSessionId(args.id), args.command);
      return clipMiddle(output, limits.maxOutputChars);
    }
    if (action.name === SHELL_WRITE_CONTENT_TO_FILE)
      return await writeContentToFile(sandbox, action.arguments);
    return `[TOOL_ERROR] unknown tool: ${action.name}`;
  } catch (error) {
    const failure = error instanceof Error ? error : new Error(String(error));
    return `[TOOL_ERROR] ${action.name}: ${failure.name}: ${failure.message}`;
  }
}

async function shellExec(
  sandbox: Sandbox,
  args: Record<string, unknown>,
  limits: TerminalToolLimits,
): Promise<string> {
  const command = requireCommand(args.command);
  if (args.block !== undefined && typeof args.block !== 'boolean')
    throw new ToolArgumentError('"block" must be true or false');
  const timeoutMs = commandTimeoutMs(args.timeout, limits);
  // `exec 2>&1` first: stderr lands in stdout in the order it was written.
  const result = await sandbox.exec(['bash', '-c', `exec 2>&1\n${command}`], { timeoutMs });
  const output = [result.stdout, result.stderr].filter((part) => part.length > 0).join('\n');
  const status = result.timedOut
    ? `[command timed out after ${timeoutMs / 1000} s and was killed]`
    : `[exit code: ${result.exitCode ?? 'unknown'}]`;
  const body = output.trimEnd();
  return `${body.length > 0 ? `${clipMiddle(body, limits.maxOutputChars)}\n` : ''}${status}`;
}

function requireCommand(command: unknown): string {
  if (typeof command !== 'string' || command.trim().length === 0)
    throw new ToolArgumentError('"command" must be a non-empty string');
  return command;
}

function commandTimeoutMs(timeout: unknown, limits: TerminalToolLimits): number {
  const left = limits.deadline === undefined ? Number.POSITIVE_INFINITY : limits.deadline - Date.now();
  if (left <= 0) throw new ToolArgumentError('the agent time limit has ended');
  if (timeout === undefined || timeout === null) return Math.min(limits.defaultTimeoutMs, Math.ceil(left));
  const seconds = typeof timeout === 'string' ? Number(timeout) : timeout;
  if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds <= 0)
    throw new ToolArgumentError('"timeout" must be a positive number of seconds');
  return Math.min(Math.round(seconds * 1000), limits.maxTimeoutMs, Math.ceil(left));
}

async function writeContentToFile(sandbox: Sandbox, args: Record<string, unknown>): Promise<string> {
  const { content, file_path: path } = args;
  if (typeof content !== 'string') throw new ToolArgumentError('"content" must be a string');
  if (typeof path !== 'string' || !path.startsWith('/'))
    throw new ToolArgumentError('"file_path" must be an absolute path');
  // Written by the sandbox's user through a shell, so file permissions apply as to any command of the agent.
  const result = await sandbox.exec(
    ['bash', '-c', 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', 'write', path],
    {
      timeoutMs: 30_000,
      stdin: content,
    },
  );
  if (result.exitCode !== 0) {
    const reason = `${result.stdout}${result.stderr}`.trim() || `exit code ${result.exitCode}`;
    throw new Error(`could not write ${path}: ${reason}`);
  }
  return `Wrote ${Buffer.byteLength(content)} bytes to ${path}`;
}
