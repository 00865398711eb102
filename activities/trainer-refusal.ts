// Telling a trainer's refusal (the same batch fails the same way every time) from a failure worth retrying.
import { ApplicationFailure } from '@temporalio/activity';
import { EngineHttpError } from '../engines/engine-http.js';
import { TRAINER_REFUSED } from './training-errors.js';

/** A refusal of `message`, for backends that find the problem themselves (non-retryable). */
export function trainerRefusal(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, TRAINER_REFUSED);
}

/**
 * A trainer's HTTP answer that says the request itself is wrong (4xx other than 408 and 429, e.g. 400 invalid,
 * 409 a step id reused with another batch, 422 non-finite gradient) becomes a refusal; anything else (5xx, a
 * connection error, a timeout) is returned as it is, to be retried.
 */
export function asTrainerRefusal(error: unknown): unknown {
  if (error instanceof EngineHttpError && error.permanent) return trainerRefusal(error.message);
  return error;
}
