// What a terminal episode remembers between steps, kept in a root-owned file inside its own container rather
// than in worker memory, so whichever worker takes the next step (or the evaluation) finds it with the
// container. Each finished tool call is recorded under its id and a hash of its arguments: a step retried after
// a crash returns the recorded observation instead of running a shell command a second time.

import { z } from 'zod';
import { fnv1a64Hex } from '../../core/fnv1a64.js';
import type { ToolCallAction } from '../environment.js';
import type { Sandbox } from '../sandbox.js';

export const TERMINAL_EPISODE_FILE = '/run/openclaw/terminal-episode.json';

const episodeStateSchema = z.strictObject({
  version: z.literal(1),
  /** The task folder the container was reset for. */
  folder: z.string(),
  toolCalls: z.number().int().min(0),
  /** Observation of each finished call, by `callKey`. */
  finished: z.record(z.string(), z.string()),
});

export type TerminalEpisodeState = z.infer<typeof episodeStateSchema>;

export function freshTerminalEpisode(folder: string): TerminalEpisodeState {
  return { version: 1, folder, toolCalls: 0, finished: {} };
}

export function callKey(action: ToolCallAction): string {
  return `${action.id}:${fnv1a64Hex(JSON.stringify([action.name, action.arguments]))}`;
}

export async function readTerminalEpisode(sandbox: Sandbox, folder: string): Promise<TerminalEpisodeState> {
  let text: string;
  try {
    text = (await sandbox.readFile(TERMINAL_EPISODE_FILE)).toString('utf8');
  } catch (error) {
    throw new Error(`terminal episode state is missing in sandbox ${sandbox.id} (was reset called?)`, {
      cause: error,
    });
  }
  const state = episodeStateSchema.parse(JSON.parse(text));
  if (state.folder !== folder)
    throw new Error(`sandbox ${sandbox.id} holds an episode of task ${state.folder}, not ${folder}`);
  return state;
}

export async function writeTerminalEpisode(sandbox: Sandbox, state: TerminalEpisodeState): Promise<void> {
  await sandbox.writeFile(TERMINAL_EPISODE_FILE, JSON.stringify(state));
}
