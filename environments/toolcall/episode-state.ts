// What a toolcall episode must remember between steps (how many tool calls ran, and what each returned), kept
// in a file inside the episode's own sandbox rather than in worker memory: the next step, or `evaluate`, may
// run in another worker process after a restart, and it finds the state wherever the container is. The file
// is written through the Engine API as root (mode 0644), so the policy's code can read it but not change it.
//
// Each finished call is recorded under a key made from its id and arguments, so a step that is retried after
// a crash returns the recorded observation instead of running the code (and counting the call) twice.

import { z } from 'zod';
import { fnv1a64Hex } from '../../core/fnv1a64.js';
import type { ToolCallAction } from '../environment.js';
import type { Sandbox } from '../sandbox.js';

export const EPISODE_STATE_FILE = '/run/openclaw/toolcall-episode.json';

const episodeStateSchema = z.strictObject({
  version: z.literal(1),
  taskId: z.string(),
  /** Code runs so far (the reward's tool-call count); invalid calls are not counted. */
  toolCalls: z.number().int().min(0),
  invalidCalls: z.number().int().min(0),
  /** Observation of each finished call, by `actionKey`. */
  finished: z.record(z.string(), z.strictObject({ observation: z.string(), done: z.boolean() })),
});

export type EpisodeState = z.infer<typeof episodeStateSchema>;

export function freshEpisodeState(taskId: string): EpisodeState {
  return { version: 1, taskId, toolCalls: 0, invalidCalls: 0, finished: {} };
}

/** The identity of a call for deduplication: its id and a hash of what it asked for. */
export function actionKey(action: ToolCallAction): string {
  return `${action.id}:${fnv1a64Hex(JSON.stringify([action.name, action.arguments]))}`;
}

export async function readEpisodeState(sandbox: Sandbox, taskId: string): Promise<EpisodeState> {
  let text: string;
  try {
    text = (await sandbox.readFile(EPISODE_STATE_FILE)).toString('utf8');
  } catch (error) {
    throw new Error(`toolcall episode state is missing in sandbox ${sandbox.id} (was reset called?)`, {
      cause: error,
    });
  }
  const state = episodeStateSchema.parse(JSON.parse(text));
  if (state.taskId !== taskId) {
    throw new Error(`sandbox ${sandbox.id} holds an episode of task ${state.taskId}, not ${taskId}`);
  }
  return state;
}

export async function writeEpisodeState(sandbox: Sandbox, state: EpisodeState): Promise<void> {
  await sandbox.writeFile(EPISODE_STATE_FILE, JSON.stringify(state));
}
