// One training step and its publication, shared by the Track 1 and Track 2 training loops. If the trainer
// restarted between the two (it no longer holds the step and the version was never saved), publishing
// refuses and the step is trained again from the last checkpoint, under the same step id, instead of
// publishing the base weights as the new version. A step trained again is no longer the run's first: it
// resumes from the last checkpoint, never from the base.
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import type { PublishInput, TrainingActivities, TrainStepInput } from '../activities/training-activities.js';
import { TRAINER_LOST_STEP } from '../activities/training-errors.js';

type TrainerCalls = Pick<TrainingActivities, 'trainStep' | 'publishWeights'>;

const MAX_RETRAINS = 3;

export async function trainAndPublish(
  trainer: TrainerCalls,
  step: TrainStepInput,
  version: number,
  publish: Pick<PublishInput, 'incarnation' | 'keepCheckpoints'> = {},
): Promise<{ metrics: Record<string, number>; checkpoint: string }> {
  for (let retrain = 0; ; retrain++) {
    const metrics = await trainer.trainStep(step);
    try {
      const checkpoint = await trainer.publishWeights({
        runId: step.runId,
        stepId: step.stepId,
        version,
        ...(publish.incarnation !== undefined && { incarnation: publish.incarnation }),
        ...(publish.keepCheckpoints !== undefined && { keepCheckpoints: publish.keepCheckpoints }),
      });
      return { metrics, checkpoint };
    } catch (error) {
      const lost =
        error instanceof ActivityFailure &&
        error.cause instanceof ApplicationFailure &&
        error.cause.type === TRAINER_LOST_STEP;
      if (!lost || retrain >= MAX_RETRAINS) throw error;
    }
  }
}
