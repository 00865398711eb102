// Bounded retries with exponential backoff for the recorder's store and Temporal calls: a brief outage
// (a busy disk, a Temporal frontend restarting) should not cost a client its turn, and a long one should
// fail the request quickly enough for the client to retry it.

import { setTimeout as sleep } from 'node:timers/promises';

export interface RetryOptions {
  /** Tries in all, the first included. */
  attempts: number;
  initialDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { attempts: 4, initialDelayMs: 100, maxDelayMs: 2_000 };

export async function withRetry<T>(
  operation: () => Promise<T>,
  options: RetryOptions = DEFAULT_RETRY,
  isRetryable: (error: unknown) => boolean = isTransient,
): Promise<T> {
  let delay = options.initialDelayMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      if (attempt >= options.attempts || !isRetryable(error)) throw error;
      await sleep(delay * (0.5 + Math.random()));
      delay = Math.min(delay * 2, options.maxDelayMs);
    }
  }
}

/** Programming errors do not heal by waiting; anything else (I/O, network, gRPC) may. */
export function isTransient(error: unknown): boolean {
  return !(error instanceof TypeError || error instanceof RangeError || error instanceof SyntaxError);
}
