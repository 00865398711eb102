// A rollout's result before anything is known (FAILED, nothing run), and how a failure reads in one: its
// message and its causes', outermost first.
import type { EnvRolloutResult } from './agentic-signals.js';

/** The result of a rollout that did nothing: FAILED with `detail` until the rollout says otherwise. */
export function failedRolloutResult(rolloutId: string, detail = ''): EnvRolloutResult {
  return {
    rolloutId,
    status: 'FAILED',
    reward: null,
    steps: 0,
    sampleIds: [],
    containerIds: [],
    hostIds: [],
    parseErrors: 0,
    detail,
    stepScores: null,
  };
}

/** The messages of a failure and its causes, outermost first ("Activity task failed: ..."). */
export function describeFailure(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  while (current instanceof Error && parts.length < 5) {
    if (current.message && !parts.includes(current.message)) parts.push(current.message);
    current = (current as { cause?: unknown }).cause;
  }
  return parts.join(': ') || String(error);
}
