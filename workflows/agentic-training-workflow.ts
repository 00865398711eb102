// The Track 2 training loop (`agentic-<runId>`), one training step per run: pick the step's tasks, fan out
// samplesPerTask rollouts per task as a tree (this workflow → rolloutBatchWorkflow children of ≤1,000
// rollouts each → envRolloutWorkflow children) under a sliding window of rolloutsInFlight, group the
// finished rollouts per task, compute advantages and store the samples (an activity), train them with the
// Track 1 trainStep (GRPO loss) and publish the new weights (policy version + 1), then continue-as-new.
import { ApplicationFailure } from '@temporalio/workflow';
import { agenticTrainingInputSchema } from '../core/rollout-settings.js';
import { describeZodError } from '../core/training-settings.js';
import { AgenticRun } from './agentic-run.js';
import type { AgenticCarry, AgenticTrainingInput, StepSummary } from './agentic-signals.js';

export async function agenticTrainingWorkflow(rawInput: AgenticTrainingInput): Promise<StepSummary[]> {
  const parsed = agenticTrainingInputSchema.safeParse(rawInput);
  if (!parsed.success)
    throw ApplicationFailure.nonRetryable(
      `invalid agentic training input: ${describeZodError(parsed.error)}`,
      'InvalidInput',
    );
  const run = new AgenticRun(parsed.data, (rawInput.carried ?? null) as AgenticCarry | null);
  run.registerHandlers();
  await run.loadTaskPool();
  if (run.allStepsDone()) return run.finish();

  await run.waitWhilePaused();
  const step = run.planStep();
  const rollouts = await run.runRollouts(step);
  const assembled = await run.assembleSamples(step, rollouts);
  const metrics = await run.trainStep(step, assembled);
  run.recordStep(step, rollouts.counts, assembled, metrics);
  return run.continueAsNewOrFinish();
}
