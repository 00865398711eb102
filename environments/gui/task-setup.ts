// Runs an OSWorld task's config steps (and an evaluator's postconfig) in the episode's container: `launch`
// starts an application detached and waits for its window, `execute`/`command` run a command to its end,
// `sleep` waits, `download` copies the task's local files in (from the task file's folder only), `open` hands a file to the desktop's opener,
// `activate_window` raises a window. Commands run as the sandbox user on the desktop (DISPLAY :0).

import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Sandbox } from '../sandbox.js';
import { confinedTaskPath } from '../task-files.js';
import { launchDetached, outputOf, runOnDesktop, runScript, waitForWindow } from './desktop.js';
import type { ConfigStep } from './osworld-task.js';

export interface SetupLimits {
  /** How long a launched application's window may take to appear. */
  startTimeoutMs: number;
  commandTimeoutMs: number;
}

/** An OSWorld command as an argv: strings (and lists with `shell: true`) run through `sh -c`. */
export function commandArgv(command: string | string[], shell: boolean | undefined): string[] {
  if (typeof command === 'string') return ['sh', '-c', command];
  return shell === true ? ['sh', '-c', command.join(' ')] : command;
}

/** The window a launched command is waited for: the task's `window`, else the program's own name. */
export function launchWindowPattern(parameters: {
  command: string | string[];
  window?: string | undefined;
}): string {
  if (parameters.window !== undefined) return parameters.window;
  const program =
    typeof parameters.command === 'string'
      ? (parameters.command.trim().split(/\s+/)[0] ?? '')
      : (parameters.command[0] ?? '');
  return `^${basename(program).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
}

/**
 * A local file the task names (absolute, file:// or relative to the task file's folder) as a path here; it
 * must lie inside the task file's folder (`field` names the task field in a refusal).
 */
export async function localPath(url: string, baseDir: string, field: string): Promise<string> {
  const path = await confinedTaskPath(baseDir, url, field);
  if (path === null) throw new Error(`${field}: the task's file ${url} does not exist`);
  return path;
}

export async function runConfigSteps(
  sandbox: Sandbox,
  steps: readonly ConfigStep[],
  baseDir: string,
  limits: SetupLimits,
): Promise<void> {
  for (const [index, step] of steps.entries()) {
    try {
      await runConfigStep(sandbox, step, baseDir, limits);
    } catch (error) {
      throw new Error(`config step ${index} (${step.type}) failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
  }
}

async function runConfigStep(sandbox: Sandbox, step: ConfigStep, baseDir: string, limits: SetupLimits) {
  switch (step.type) {
    case 'launch':
      await launchDetached(
        sandbox,
        commandArgv(step.parameters.command, step.parameters.shell),
        limits.commandTimeoutMs,
      );
      await waitForWindow(sandbox, launchWindowPattern(step.parameters), limits.startTimeoutMs);
      return;
    case 'execute':
    case 'command': {
      // Like OSWorld, a command's exit status is not a failure of the setup; running past the limit is.
      const result = await runOnDesktop(
        sandbox,
        commandArgv(step.parameters.command, step.parameters.shell),
        limits.commandTimeoutMs,
      );
      if (result.timedOut) throw new Error(`the command ran longer than ${limits.commandTimeoutMs / 1000} s`);
      return;
    }
    case 'sleep':
      await new Promise((done) => setTimeout(done, step.parameters.seconds * 1000));
      return;
    case 'download':
      for (const [i, file] of step.parameters.files.entries()) {
        const source = await localPath(file.url, baseDir, `parameters.files[${i}].url`);
        await copyIn(sandbox, source, file.path, limits.commandTimeoutMs);
      }
      return;
    case 'open': {
      const result = await runScript(
        sandbox,
        'command -v xdg-open >/dev/null || { echo "this image has no xdg-open: use a launch step with the application and the file"; exit 3; }; setsid nohup xdg-open "$1" >/dev/null 2>&1 </dev/null &',
        [step.parameters.path],
        limits.commandTimeoutMs,
      );
      if (result.exitCode !== 0) throw new Error(outputOf(result));
      return;
    }
    case 'activate_window': {
      const by = step.parameters.by_class === true ? '--class' : '--name';
      const name =
        step.parameters.strict === true ? `^${step.parameters.window_name}$` : step.parameters.window_name;
      const result = await runOnDesktop(
        sandbox,
        ['xdotool', 'search', '--onlyvisible', by, name, 'windowactivate', '--sync'],
        limits.commandTimeoutMs,
      );
      if (result.exitCode !== 0) throw new Error(`no window "${name}" to activate: ${outputOf(result)}`);
      return;
    }
  }
}

/** Places a local file in the container, owned by the sandbox user (the task may ask to edit it). */
async function copyIn(sandbox: Sandbox, source: string, target: string, timeoutMs: number): Promise<void> {
  let content: Buffer;
  try {
    content = await readFile(source);
  } catch (error) {
    throw new Error(`cannot read the task's file ${source}: ${(error as Error).message}`, { cause: error });
  }
  // Written as root by the Engine API, then copied by the sandbox user so that user owns it.
  const staged = `/tmp/openclaw-gui-staged/${basename(target)}`;
  await sandbox.writeFile(staged, content);
  const result = await runScript(
    sandbox,
    'mkdir -p "$(dirname "$2")" && cp "$1" "$2"',
    [staged, target],
    timeoutMs,
  );
  if (result.exitCode !== 0) throw new Error(`cannot place ${target}: ${outputOf(result)}`);
}
