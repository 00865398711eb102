/** Failure type of publishWeights when the trainer no longer holds the step it should publish. */
export const TRAINER_LOST_STEP = 'TrainerLostStep';
