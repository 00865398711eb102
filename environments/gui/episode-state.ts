// What a gui episode remembers between activities, kept in a root-owned file in its own container (the next
// step may run in another worker process after a restart): whether the task's setup has run (a retried reset
// must not launch the applications twice) and the result of the last action, so a step retried after a crash
// returns what it returned instead of clicking or typing again.

import { z } from 'zod';
import { fnv1a64Hex } from '../../core/fnv1a64.js';
import { SandboxFileNotFoundError } from '../docker-errors.js';
import type { StepResult, ToolCallAction } from '../environment.js';
import type { Sandbox } from '../sandbox.js';

export const GUI_EPISODE_FILE = '/run/openclaw/gui-episode.json';

const stepResultSchema = z.strictObject({
  observation: z.string(),
  images: z.array(z.string()).optional(),
  done: z.boolean(),
});

const guiEpisodeSchema = z.strictObject({
  version: z.literal(1),
  taskId: z.string(),
  setupDone: z.boolean(),
  last: z.strictObject({ key: z.string(), result: stepResultSchema }).nullable(),
});

export type GuiEpisodeState = z.infer<typeof guiEpisodeSchema>;

export function actionKey(action: ToolCallAction): string {
  return `${action.id}:${fnv1a64Hex(JSON.stringify([action.name, action.arguments]))}`;
}

/** The episode's state, or null before reset wrote it. */
export async function readGuiEpisode(sandbox: Sandbox, taskId: string): Promise<GuiEpisodeState | null> {
  let text: string;
  try {
    text = (await sandbox.readFile(GUI_EPISODE_FILE)).toString('utf8');
  } catch (error) {
    if (error instanceof SandboxFileNotFoundError) return null;
    throw error;
  }
  const state = guiEpisodeSchema.parse(JSON.parse(text));
  if (state.taskId !== taskId) {
    throw new Error(`sandbox ${sandbox.id} holds a gui episode of task ${state.taskId}, not ${taskId}`);
  }
  return state;
}

export async function writeGuiEpisode(sandbox: Sandbox, state: GuiEpisodeState): Promise<void> {
  await sandbox.writeFile(GUI_EPISODE_FILE, JSON.stringify(state));
}

export function lastStepResult(state: GuiEpisodeState, action: ToolCallAction): StepResult | null {
  return state.last?.key === actionKey(action) ? state.last.result : null;
}
