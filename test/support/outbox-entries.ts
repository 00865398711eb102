// Outbox entries for store, relay and benchmark code: a main turn's entry as the gateway writes it, for a
// session workflow started on `control` with settings that need no worker to make sense.
import { type OutboxEntry, type OutboxWorkflow, turnEntry } from '../../store/outbox.js';

export const TEST_OUTBOX_WORKFLOW: OutboxWorkflow = {
  taskQueue: 'control',
  input: {
    sessionId: 's',
    runId: 'default',
    method: 'rl',
    judgeVotes: 1,
    idleTimeoutMs: 60_000,
    continueAsNewAfterTurns: 200,
  },
};

/** The entry of turn `turn` of `sessionId` (policy version 0 unless given). */
export function testTurnEntry(
  sessionId: string,
  turn: number,
  createdAt?: number,
  policyVersion = 0,
): OutboxEntry {
  return turnEntry(
    { sessionId, turn, sampleId: `${sessionId}:${turn}`, policyVersion, kind: 'main' },
    TEST_OUTBOX_WORKFLOW,
    createdAt,
  );
}
