// Failure types of the training activities, importable by workflow code (this file imports nothing).

/** Failure type of publishWeights when the trainer no longer holds the step it should publish. */
export const TRAINER_LOST_STEP = 'TrainerLostStep';

/**
 * Failure type of a training step the trainer refused for a reason that will not change on a retry: a field
 * it cannot accept, a non-finite gradient, a loss or temperature it does not support, a sample missing from
 * the store. Non-retryable; the training run makes the samples that cause it `trainer-refused` exclusions (those
 * the refusal names, else found by splitting the batch) and trains the others.
 */
export const TRAINER_REFUSED = 'TrainerRefused';

/** The first detail of a TRAINER_REFUSED failure whose trainer named the samples it refuses. */
export interface RefusedSamples {
  refusedSampleIds: string[];
}
