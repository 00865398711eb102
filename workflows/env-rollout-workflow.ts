// One rollout of one task (`rollout-<rolloutId>`) in at most two activities (workflows/episode-rollout.ts):
// `startEpisode` acquires and resets (and runs a container-free episode to its end); `runEpisode` on the
// host's own queue runs the loop, the evaluation and the release. Each step is durable through its record in the sample store
// (`rollouts/<rolloutId>/...`, activities/rollout-records.ts), so a retried episode activity resumes where it
// stopped and this workflow carries only small summaries: a handful of history events per rollout instead of
// a few per step. Rollouts started before this shape replay through env-rollout-steps.ts.
import { ApplicationFailure, patched } from '@temporalio/workflow';
import { envRolloutInputSchema } from '../core/rollout-settings.js';
import { describeZodError } from '../core/training-settings.js';
import type { EnvRolloutInput, EnvRolloutResult } from './agentic-signals.js';
import { rolloutStepByStep } from './env-rollout-steps.js';
import { rolloutByEpisode } from './episode-rollout.js';

/** Marks rollouts that run as episode activities (histories without it replay step by step). */
export const EPISODE_ACTIVITIES_PATCH = 'episode-activities';

export async function envRolloutWorkflow(rawInput: EnvRolloutInput): Promise<EnvRolloutResult> {
  const parsed = envRolloutInputSchema.safeParse(rawInput);
  if (!parsed.success)
    throw ApplicationFailure.nonRetryable(
      `invalid rollout input: ${describeZodError(parsed.error)}`,
      'InvalidInput',
    );
  if (!patched(EPISODE_ACTIVITIES_PATCH)) return rolloutStepByStep(parsed.data);
  return rolloutByEpisode(parsed.data);
}
