// The session loop of runs started before turns were paired by their kept reply: each main turn pairs with
// the next one in turn-number order. It runs only when replaying or continuing such a run (sessionWorkflow
// chooses it with `patched()`), so its commands must stay exactly as they were; delete it once no session
// started before that change can still be running or replayed.

import {
  allHandlersFinished,
  condition,
  continueAsNew,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { TurnRef } from '../core/types.js';
import { startScoreTurn } from './score-turn-child.js';
import type { ScoreTurnInput } from './score-turn-workflow.js';
import {
  type SequentialSessionCarry,
  type SessionEnd,
  type SessionInput,
  type SessionResult,
  type SessionStatus,
  sessionDoneSignal,
  sessionStatusQuery,
  turnRecordedSignal,
} from './session-signals.js';

export async function sequentialSession(input: SessionInput): Promise<SessionResult> {
  const carried = (input.carried as SequentialSessionCarry | undefined) ?? {
    waiting: [],
    highestScored: 0,
    turnsScored: 0,
  };
  // Turns received and not yet handed to scoring, kept sorted by turn number.
  const waiting: TurnRef[] = [...carried.waiting];
  let highestScored = carried.highestScored;
  let turnsScored = carried.turnsScored;
  let turnsThisRun = 0;
  let done = false;
  const inbox: TurnRef[] = [];

  setHandler(turnRecordedSignal, (ref) => {
    inbox.push(ref);
  });
  setHandler(sessionDoneSignal, () => {
    done = true;
  });
  setHandler(
    sessionStatusQuery,
    (): SessionStatus => ({
      sessionId: input.sessionId,
      waitingTurns: waiting.map((t) => t.turn),
      openTurns: waiting.map((t) => t.sampleId),
      turnsReceived: turnsScored + waiting.length,
      turnsScored,
      turnsSuperseded: 0,
      highestTurn: Math.max(highestScored, ...waiting.map((t) => t.turn)),
      reopened: 0,
      phase: done ? 'done' : 'active',
      done,
    }),
  );

  const score = async (turn: TurnRef, next: TurnRef | null): Promise<void> => {
    const scoreInput: ScoreTurnInput = {
      runId: input.runId,
      method: input.method,
      judgeVotes: input.judgeVotes,
      ...(input.heartbeatTimeoutMs !== undefined && { heartbeatTimeoutMs: input.heartbeatTimeoutMs }),
      turn,
      nextSampleId: next?.sampleId ?? null,
    };
    // Already scored (a duplicate delivery after a restart): the first scoring stands, and counts here too.
    await startScoreTurn(scoreInput);
    highestScored = Math.max(highestScored, turn.turn);
    turnsScored++;
    turnsThisRun++;
  };

  const takeInbox = (): void => {
    for (const ref of inbox.splice(0)) {
      const duplicate = ref.turn <= highestScored || waiting.some((t) => t.turn === ref.turn);
      if (duplicate || ref.kind !== 'main') continue;
      waiting.push(ref);
    }
    waiting.sort((a, b) => a.turn - b.turn);
  };

  let end: SessionEnd = 'done-signal';
  for (;;) {
    const woke = await condition(() => inbox.length > 0 || done, input.idleTimeoutMs);
    takeInbox();
    // Every turn but the latest now has its next state: the turn after it.
    while (waiting.length > 1) {
      const [turn, next] = waiting as [TurnRef, TurnRef, ...TurnRef[]];
      await score(turn, next);
      waiting.shift();
    }
    if (!woke) end = 'idle';
    if (done || !woke) break;
    if (turnsThisRun >= input.continueAsNewAfterTurns || workflowInfo().continueAsNewSuggested) {
      await allHandlersFinished();
      takeInbox();
      await continueAsNew<typeof sequentialSession>({
        ...input,
        carried: { waiting: [...waiting], highestScored, turnsScored },
      });
    }
  }

  // The session is over: the last turn has no next state. Scoring records it (an exclusion by default).
  await allHandlersFinished();
  takeInbox();
  for (const [index, turn] of waiting.entries()) await score(turn, waiting[index + 1] ?? null);
  return { sessionId: input.sessionId, end, turnsScored };
}
