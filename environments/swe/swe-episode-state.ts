// What a swe episode keeps between steps, inside its own container (so the next step, or the evaluation,
// may run in another worker process): each finished command's result under a key made from the call's id
// and arguments, so a step retried after a crash answers what the command answered instead of running it
// twice; and the submitted patch. Written through the Engine API as root (0644): readable, not writable, by
// the policy's commands in the bundled images.

import { fnv1a64Hex } from '../../core/fnv1a64.js';
import { SandboxFileNotFoundError } from '../docker-errors.js';
import type { StepResult, ToolCallAction } from '../environment.js';
import type { Sandbox } from '../sandbox.js';

export const EPISODE_DIR = '/run/openclaw/swe';
export const SUBMISSION_FILE = `${EPISODE_DIR}/submission.patch`;

function stepFile(action: ToolCallAction): string {
  return `${EPISODE_DIR}/steps/${fnv1a64Hex(JSON.stringify([action.id, action.name, action.arguments]))}.json`;
}

/** Forgets a previous episode in this container (a second reset). */
export async function clearEpisode(sandbox: Sandbox): Promise<void> {
  const result = await sandbox.exec(['rm', '-rf', EPISODE_DIR], { timeoutMs: 10_000, user: '0:0' });
  if (result.exitCode !== 0)
    throw new Error(`could not clear the swe episode state in ${sandbox.id}: ${result.stderr.trim()}`);
}

export async function readFinishedStep(sandbox: Sandbox, action: ToolCallAction): Promise<StepResult | null> {
  const text = await readOptional(sandbox, stepFile(action));
  return text === null ? null : (JSON.parse(text) as StepResult);
}

export async function recordFinishedStep(
  sandbox: Sandbox,
  action: ToolCallAction,
  result: StepResult,
): Promise<void> {
  await sandbox.writeFile(stepFile(action), JSON.stringify(result));
}

export async function readSubmission(sandbox: Sandbox): Promise<string | null> {
  return readOptional(sandbox, SUBMISSION_FILE);
}

export async function recordSubmission(sandbox: Sandbox, patch: string): Promise<void> {
  await sandbox.writeFile(SUBMISSION_FILE, patch);
}

async function readOptional(sandbox: Sandbox, path: string): Promise<string | null> {
  try {
    return (await sandbox.readFile(path)).toString('utf8');
  } catch (error) {
    if (error instanceof SandboxFileNotFoundError) return null;
    throw error;
  }
}
