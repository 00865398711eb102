// The training loop of runs started before incarnations: no incarnation, no continue-as-new while waiting, no
// spilled backlog, and a batch the trainer refuses fails the run. It runs only when replaying or continuing
// such a run (trainingWorkflow chooses it with `patched()`), so its commands must stay exactly as they were;
// delete it once no training run started before that change can still be running or replayed.

import { condition } from '@temporalio/workflow';
import { trainAndPublish } from './train-and-publish.js';
import type { TrainingRun } from './training-run.js';

export async function trainBeforeIncarnations(run: TrainingRun): Promise<never> {
  for (;;) {
    await condition(() => run.batchReady());
    if (!run.batchReady()) continue;
    if (await run.dropStaleSamples()) continue;
    const training = run.trainer();
    const step = run.planStep();
    const published = await trainAndPublish(
      training,
      // Samples from policies too far behind use their rollout log-probs for the importance ratio.
      run.trainStepInput(step, { useRolloutLogprobs: step.batch.some((ref) => run.isStale(ref)) }),
      step.version,
      {},
    );
    await run.recordStep(step, published);
    if (run.stepsDue()) await run.continueAsNew({ spillBacklog: false });
  }
}
