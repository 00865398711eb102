// One training step and its publication, shared by the Track 1 and Track 2 training loops. If the trainer
// restarted between the two (it no longer holds the step and the version was never saved), publishing
// refuses and the step is trained again from the last checkpoint, under the same step id, instead of
// publishing the base weights as the new version. A step trained again is no longer the run's first: it
// resumes from the last checkpoint, never from the base. With a publish gate, the trained version is evaluated
// first (activities/gate-activities.ts) and a held one is saved without being served.
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import type { PublishInput, TrainingActivities, TrainStepInput } from '../activities/training-activities.js';
import { TRAINER_LOST_STEP } from '../activities/training-errors.js';
import type { VersionEvaluation } from './training-signals.js';

type TrainerCalls = Pick<TrainingActivities, 'trainStep' | 'publishWeights'>;

/** What a step and its publication (or its hold) leave. */
export interface StepOutcome {
  metrics: Record<string, number>;
  checkpoint: string;
  /** The publish gate's verdict (absent: the run has no gate). */
  evaluation?: VersionEvaluation;
}

const MAX_RETRAINS = 3;

export async function trainAndPublish(
  trainer: TrainerCalls,
  step: TrainStepInput,
  version: number,
  publish: Pick<PublishInput, 'incarnation' | 'keepCheckpoints' | 'servedVersion'> = {},
  /** The publish gate: evaluates the trained version before it is published. */
  evaluate?: () => Promise<VersionEvaluation>,
): Promise<StepOutcome> {
  for (let retrain = 0; ; retrain++) {
    const metrics = await trainer.trainStep(step);
    try {
      const evaluation = evaluate === undefined ? undefined : await evaluate();
      const checkpoint = await trainer.publishWeights({
        runId: step.runId,
        stepId: step.stepId,
        version,
        ...(publish.incarnation !== undefined && { incarnation: publish.incarnation }),
        ...(publish.keepCheckpoints !== undefined && { keepCheckpoints: publish.keepCheckpoints }),
        ...(publish.servedVersion !== undefined && { servedVersion: publish.servedVersion }),
        ...(evaluation?.decision === 'held' && { serve: false }),
      });
      return { metrics, checkpoint, ...(evaluation !== undefined && { evaluation }) };
    } catch (error) {
      const lost =
        error instanceof ActivityFailure &&
        error.cause instanceof ApplicationFailure &&
        error.cause.type === TRAINER_LOST_STEP;
      if (!lost || retrain >= MAX_RETRAINS) throw error;
    }
  }
}
