// Activity options of the workflows' bookkeeping (store writes, a step's own activities) and of trainer calls,
// in one place. Every timeout and retry value here is part of the commands a workflow records: changing one
// changes what running workflows replay against, so a new value needs a new name (and the old one kept for the
// runs that use it). Judge and rollout calls keep their options beside the code that makes them.
import type { ActivityOptions } from '@temporalio/workflow';
import { TRAINER_REFUSED } from '../activities/training-errors.js';

/** Store writes of the training loop: quick, so a short timeout lets a dead worker's attempt be retried soon. */
export const trainingStoreWrites: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
};

/** Store writes and the delivery signal of a scored turn: quick as well, retried at most a minute apart. */
export const scoringStoreWrites: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
};

/**
 * A Track 2 step's own activities on the env queue (listing the tasks, assembling the step's samples):
 * assembling reads every rollout of the step, so it gets half an hour.
 */
export function agenticStepCalls(envTaskQueue: string | undefined): ActivityOptions {
  return {
    taskQueue: envTaskQueue,
    startToCloseTimeout: '30 minutes',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
  };
}

/** A rollout batch writing its slot results to the store, on the env queue. */
export function batchResultsWrite(envTaskQueue: string): ActivityOptions {
  return {
    taskQueue: envTaskQueue,
    startToCloseTimeout: '5 minutes',
    retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
  };
}

/**
 * Training steps and publishing: long, heartbeating, retried until they succeed (they are idempotent), so a
 * trainer that restarts or a network that drops costs time, not samples. With `refusalsFail`, a step the
 * trainer refuses is not retried: it fails at once (`TrainerRefused`), and the Track 1 loop turns the batch
 * into exclusions; the Track 2 loop keeps retrying it.
 */
export function trainerCalls(
  heartbeatTimeoutMs: number,
  taskQueue: string | undefined,
  { refusalsFail }: { refusalsFail: boolean },
): ActivityOptions {
  return {
    taskQueue,
    startToCloseTimeout: '2 hours',
    heartbeatTimeout: heartbeatTimeoutMs,
    retry: {
      initialInterval: '2 seconds',
      backoffCoefficient: 2,
      maximumInterval: '1 minute',
      ...(refusalsFail && { nonRetryableErrorTypes: [TRAINER_REFUSED] }),
    },
  };
}
