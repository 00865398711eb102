// Telling a trainer's refusal (the same batch fails the same way every time) from a failure worth retrying,
// and which of the batch's samples a refusal names, when the trainer says.
import { ApplicationFailure } from '@temporalio/activity';
import { EngineHttpError } from '../engines/engine-http.js';
import { type RefusedSamples, TRAINER_REFUSED } from './training-errors.js';

/**
 * A refusal of `message`, for backends that find the problem themselves (non-retryable); `sampleIds`: the
 * samples it is about, when known (the training run then excludes only them).
 */
export function trainerRefusal(message: string, sampleIds: readonly string[] = []): ApplicationFailure {
  const details: RefusedSamples[] = sampleIds.length > 0 ? [{ refusedSampleIds: [...sampleIds] }] : [];
  return ApplicationFailure.create({ message, type: TRAINER_REFUSED, nonRetryable: true, details });
}

/**
 * The samples of a step's batch (`sampleIds`, in the order the trainer received them) that a refusal names
 * by position: the reference trainer's `samples[3].tokens: ...` and its schema errors' `samples.3.tokens`.
 */
export function refusedSamplesNamed(text: string, sampleIds: readonly string[]): string[] {
  const named = new Set<string>();
  for (const match of text.matchAll(/samples(?:\[|\.|",\s*)(\d+)/g)) {
    const id = sampleIds[Number(match[1])];
    if (id !== undefined) named.add(id);
  }
  return [...named];
}

/**
 * A trainer's HTTP answer that says the request itself is wrong (4xx other than 408 and 429, e.g. 400 invalid,
 * 409 a step id reused with another batch, 422 non-finite gradient) becomes a refusal; anything else (5xx, a
 * connection error, a timeout) is returned as it is, to be retried. With the step's `sampleIds` (in the order
 * the trainer received them), a refusal, this one or a backend's own, names the samples it points at.
 */
export function asTrainerRefusal(error: unknown, sampleIds: readonly string[] = []): unknown {
  if (error instanceof EngineHttpError && error.permanent)
    return trainerRefusal(error.message, refusedSamplesNamed(`${error.message} ${error.body}`, sampleIds));
  const unnamed =
    error instanceof ApplicationFailure &&
    error.type === TRAINER_REFUSED &&
    (error.details ?? []).length === 0;
  if (unnamed && sampleIds.length > 0) {
    const named = refusedSamplesNamed(error.message, sampleIds);
    if (named.length > 0) return trainerRefusal(error.message, named);
  }
  return error;
}
