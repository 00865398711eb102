// Signals and queries of sessionWorkflow, in a file of their own so the gateway can import them without
// pulling workflow code into its process.
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { FeedbackNote, FeedbackSettings } from '../core/feedback.js';
import type { PairingState } from '../core/session-pairing.js';
import type { Method, SupersededPolicy, TurnRef } from '../core/types.js';

/** A main turn was recorded in the sample store; sent by the gateway with signal-with-start. */
export const turnRecordedSignal = defineSignal<[TurnRef]>('turnRecorded');

/** Explicit feedback on one of the session's turns was stored (`POST /v1/feedback`); sent like turns. */
export const feedbackSignal = defineSignal<[FeedbackNote]>('feedback');

/** The client said the session is over (`X-Session-Done: true`); settle the last turn now. */
export const sessionDoneSignal = defineSignal<[]>('sessionDone');

/** `active`: turns are arriving; `idle`: closed by the idle timer, its open turns wait for the horizon. */
export type SessionPhase = 'active' | 'idle' | 'done';

export interface SessionStatus {
  sessionId: string;
  /** Positions of the turns waiting for their next state. */
  waitingTurns: number[];
  /** Sample ids of the turns waiting for their next state. */
  openTurns: string[];
  turnsReceived: number;
  /** Turns handed to scoring (with a next state, superseded, or without one at the end). */
  turnsScored: number;
  /** Of those, settled as superseded by a sibling the conversation continued. */
  turnsSuperseded: number;
  highestTurn: number;
  /** Times a turn arrived while the session was idle (closed by the idle timer). */
  reopened: number;
  /** Feedback received, and of it, how much made a turn score again after its first scoring. */
  feedbackReceived?: number;
  amendments?: number;
  phase: SessionPhase;
  done: boolean;
}

export const sessionStatusQuery = defineQuery<SessionStatus>('status');

/** Start input of sessionWorkflow; the gateway sends it with every signal-with-start. */
export interface SessionInput {
  sessionId: string;
  runId: string;
  method: Method;
  /** Judge votes per turn (m). */
  judgeVotes: number;
  /** A session with no new turn for this long closes; its open turns then wait for the reopen horizon. */
  idleTimeoutMs: number;
  /**
   * How long after the latest turn a reply still pairs (reopening a closed session); then the open turns are
   * settled without a next state. Absent, or at most `idleTimeoutMs`: they are settled at the idle close.
   */
  reopenHorizonMs?: number;
  /** A sibling nobody continued: an exclusion (default) or a sample with reward -1. */
  superseded?: SupersededPolicy;
  continueAsNewAfterTurns: number;
  /** How explicit feedback is scored (core/feedback.ts; default: the rating overrides, corrections as given). */
  feedback?: FeedbackSettings;
  /** Heartbeat timeout of scoring's long activities (default 30 s). */
  heartbeatTimeoutMs?: number;
  /** State carried over continue-as-new; absent on a fresh start. */
  carried?: SessionCarry | SequentialSessionCarry;
}

export interface SessionCarry {
  pairing: PairingState;
  phase: Exclude<SessionPhase, 'done'>;
  turnsReceived: number;
  turnsScored: number;
  turnsSuperseded: number;
  reopened: number;
  highestTurn: number;
  /** Turns delivered to the run before while it was on its way to this one: taken first. */
  inbox?: TurnRef[];
  /** Feedback delivered the same way, and what the session remembers of feedback (`SessionFeedback`). */
  feedbackInbox?: FeedbackNote[];
  feedback?: SessionFeedbackState;
}

/** What a session remembers of feedback, carried over continue-as-new (bounded). */
export interface SessionFeedbackState {
  /** Feedback ids handled lately: a second delivery is ignored. */
  seen: string[];
  /** Turns scored on feedback before their next state, with what their feedback said. */
  scoredEarly: { sampleId: string; rating: number | null; hasCorrection: boolean }[];
  /** The next state of turns scored lately (their sample id → the continuing turn's). */
  nextOf: [string, string][];
}

/** What runs started before turns were paired by their kept reply carry (they pair in turn order). */
export interface SequentialSessionCarry {
  waiting: TurnRef[];
  /** Turns at or below this number were already handed to scoring: duplicates of them are ignored. */
  highestScored: number;
  turnsScored: number;
}

/** How the session ended: the client said so, it was idle with nothing open, or its reopen horizon passed. */
export type SessionEnd = 'done-signal' | 'idle' | 'horizon';

export interface SessionResult {
  sessionId: string;
  end: SessionEnd;
  turnsScored: number;
}

/** sessionWorkflow's signature: what `temporal/workflow-starts.ts` starts it with (workflows/index.ts checks it). */
export type SessionWorkflow = (input: SessionInput) => Promise<SessionResult>;
