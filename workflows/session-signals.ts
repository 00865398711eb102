// Signals and queries of sessionWorkflow, in a file of their own so the gateway can import them without
// pulling workflow code into its process.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { Method, TurnRef } from '../core/types.js';

/** A main turn was recorded in the sample store; sent by the gateway with signal-with-start. */
export const turnRecordedSignal = defineSignal<[TurnRef]>('turnRecorded');

/** The client said the session is over (`X-Session-Done: true`); settle the last turn now. */
export const sessionDoneSignal = defineSignal<[]>('sessionDone');

export interface SessionStatus {
  sessionId: string;
  /** Turns received and not yet handed to scoring (at most the latest, waiting for its next state). */
  waitingTurns: number[];
  turnsScored: number;
  highestTurn: number;
  done: boolean;
}

export const sessionStatusQuery = defineQuery<SessionStatus>('status');

/** Workflow id of a session: one per session id, so signal-with-start always finds the same one. */
export function sessionWorkflowId(sessionId: string): string {
  return `session-${sessionId}`;
}

/** Task queue of the control worker (sessions, scoring, training loop, judge calls). */
export const CONTROL_TASK_QUEUE = 'control';

/** Start input of sessionWorkflow; the gateway sends it with every signal-with-start. */
export interface SessionInput {
  sessionId: string;
  runId: string;
  method: Method;
  /** Judge votes per turn (m). */
  judgeVotes: number;
  /** A session with no new turn for this long closes and settles its last turn. */
  idleTimeoutMs: number;
  continueAsNewAfterTurns: number;
  /** Heartbeat timeout of scoring's long activities (default 30 s). */
  heartbeatTimeoutMs?: number;
  /** State carried over continue-as-new; absent on a fresh start. */
  carried?: SessionCarry;
}

export interface SessionCarry {
  waiting: TurnRef[];
  /** Turns at or below this number were already handed to scoring: duplicates of them are ignored. */
  highestScored: number;
  turnsScored: number;
}
