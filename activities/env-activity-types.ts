// The inputs and results of an env host's activities (activities/env-activities.ts), apart so the workflows
// that call them and the legacy step activities import plain types.
import type { PolicySettings, StepJudgeSettings } from '../core/rollout-settings.js';
import type { EpisodeOutcome } from './episode-loop.js';

/** Which rollout an activity works for: enough to find its environment, task and container. */
export interface EpisodeRef {
  rolloutId: string;
  env: string;
  taskId: string;
  leaseMs: number;
}

export interface AcquireResult {
  hostId: string;
  hostQueue: string;
  containerId: string | null;
}

/** What an episode activity needs: the rollout and how it runs. */
export interface EpisodeInput extends EpisodeRef {
  policy: PolicySettings;
  maxTurns: number;
  maxParseErrors: number;
  contextBudgetTokens: number;
  stepJudge?: StepJudgeSettings;
}

export interface StartEpisodeResult extends AcquireResult {
  /** The finished episode of a container-free kind (run right here), or null: `runEpisode` on `hostQueue` next. */
  outcome: EpisodeOutcome | null;
}

export interface HostStepResult {
  /** The container the step ran in (null for container-free kinds). */
  containerId: string | null;
}
