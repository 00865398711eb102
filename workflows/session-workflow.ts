// One workflow per conversation. Each turn arrives (signal-with-start from the gateway) saying which earlier
// turn it continues; that turn is then scored against it (its next state is this request's last message), and
// the other answers to that same request are settled as superseded (core/session-pairing.ts). The session
// closes on X-Session-Done, settling every open turn at once, or when it has been idle for `idleTimeoutMs`;
// an idle session's open turns wait until `reopenHorizonMs` after its latest turn, so a personal agent's user
// who answers an hour later still trains the turn they answer (the session reopens). At the horizon they are
// settled without a next state (spec 3.7-3.8, 13).

import {
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  DEFAULT_PAIRING_LIMITS,
  emptyPairingState,
  type OpenTurn,
  SessionPairing,
  type Settlement,
} from '../core/session-pairing.js';
import type { TurnRef } from '../core/types.js';
import { startScoreTurn } from './score-turn-child.js';
import type { ScoreTurnInput } from './score-turn-workflow.js';
import { SessionFeedback } from './session-feedback.js';
import { sequentialSession } from './session-sequential.js';
import {
  feedbackSignal,
  type SequentialSessionCarry,
  type SessionCarry,
  type SessionEnd,
  type SessionInput,
  type SessionPhase,
  type SessionResult,
  type SessionStatus,
  sessionDoneSignal,
  sessionStatusQuery,
  turnRecordedSignal,
} from './session-signals.js';

/** Marks runs that pair turns by their kept reply; runs started before it replay the sequential loop. */
export const PAIRING_BY_KEPT_REPLY = 'pairing-by-kept-reply';

/**
 * Marks runs that lose no turn and no done signal on their way out: turns delivered while a run starts its last
 * scorings are carried into the next run (or settled, when the session ends), and a done signal ends the session
 * in the run it reached. Before it, a turn or done signalled then left with the run, unhandled.
 */
export const LATE_SIGNALS_KEPT = 'late-signals-kept';

/**
 * Marks runs that take explicit feedback: a turn with feedback is scored at once (an open one) or scored again
 * (one already scored), and the next state of a turn scored early is judged where the method uses it.
 */
export const SESSION_FEEDBACK = 'session-feedback';

export async function sessionWorkflow(input: SessionInput): Promise<SessionResult> {
  if (!patched(PAIRING_BY_KEPT_REPLY)) return sequentialSession(input);
  const keepsLateSignals = patched(LATE_SIGNALS_KEPT);
  const takesFeedback = patched(SESSION_FEEDBACK);

  const idleTimeoutMs = input.idleTimeoutMs;
  const horizonMs = Math.max(input.reopenHorizonMs ?? idleTimeoutMs, idleTimeoutMs);
  const carried = carriedState(input.carried, Date.now());
  const pairing = new SessionPairing(carried.pairing, { ...DEFAULT_PAIRING_LIMITS, horizonMs });
  let { phase, turnsReceived, turnsScored, turnsSuperseded, reopened } = carried;
  let highestTurn = carried.highestTurn;
  let turnsThisRun = 0;
  let done = false;
  const inbox: TurnRef[] = [...(carried.inbox ?? [])];
  const feedback = new SessionFeedback(input, carried.feedback, carried.feedbackInbox);

  setHandler(turnRecordedSignal, (ref) => {
    inbox.push(ref);
  });
  setHandler(feedbackSignal, (note) => {
    feedback.inbox.push(note);
  });
  setHandler(sessionDoneSignal, () => {
    done = true;
  });
  setHandler(
    sessionStatusQuery,
    (): SessionStatus => ({
      sessionId: input.sessionId,
      waitingTurns: pairing.openTurns.map((t) => t.ref.turn),
      openTurns: pairing.openTurns.map((t) => t.ref.sampleId),
      turnsReceived,
      turnsScored,
      turnsSuperseded,
      highestTurn,
      reopened,
      feedbackReceived: feedback.received,
      amendments: feedback.amendments,
      phase: done ? ('done' as SessionPhase) : phase,
      done,
    }),
  );

  const settle = async (settlement: Settlement): Promise<void> => {
    const { turn } = settlement;
    const scoreInput: ScoreTurnInput = {
      runId: input.runId,
      method: input.method,
      judgeVotes: input.judgeVotes,
      ...(input.heartbeatTimeoutMs !== undefined && { heartbeatTimeoutMs: input.heartbeatTimeoutMs }),
      turn,
      nextSampleId: settlement.kind === 'next-state' ? settlement.nextSampleId : null,
      ...(settlement.kind === 'superseded' && {
        superseded: { by: settlement.by, as: input.superseded ?? 'exclude' },
      }),
    };
    if (takesFeedback && settlement.kind === 'next-state')
      feedback.noteNextState(turn.sampleId, settlement.nextSampleId);
    // Already scored (a duplicate delivery, or an earlier run of this session): the first scoring stands.
    if (!(await startScoreTurn(scoreInput))) return;
    turnsScored++;
    if (settlement.kind === 'superseded') turnsSuperseded++;
  };

  const takeInbox = async (): Promise<void> => {
    for (const ref of inbox.splice(0)) {
      const { fresh, settlements } = pairing.receive(ref, Date.now());
      if (!fresh) continue; // a duplicate delivery, or a side turn
      turnsReceived++;
      // Counted as they arrive: a session whose turns nobody continues must continue-as-new too.
      turnsThisRun++;
      highestTurn = Math.max(highestTurn, ref.turn);
      if (phase === 'idle') {
        phase = 'active';
        reopened++;
      }
      for (const settlement of settlements) await settle(settlement);
      // The next state of a turn scored on its feedback: judged now where the method uses it.
      if (takesFeedback && ref.continues)
        await feedback.nextStateArrived(ref.continues.sampleId, ref.sampleId);
    }
    if (!takesFeedback) return;
    for (const note of feedback.inbox.splice(0)) {
      const open = pairing.takeOpen(note.sampleId);
      if (open !== null) {
        await feedback.scoreOpenTurn(open, note);
        turnsScored++;
      } else await feedback.scoreAgain(note);
    }
  };

  let end: SessionEnd = 'done-signal';
  for (;;) {
    const timeout =
      phase === 'active'
        ? idleTimeoutMs
        : Math.max(1, (pairing.latestTurnAt ?? Date.now()) + horizonMs - Date.now());
    const woke = await condition(() => inbox.length > 0 || feedback.inbox.length > 0 || done, timeout);
    await takeInbox();
    if (done) break;
    if (!woke) {
      // Idle: close, and keep the open turns for a late reply until the horizon (if it is later).
      if (phase === 'active' && horizonMs > idleTimeoutMs && pairing.openTurns.length > 0) {
        phase = 'idle';
        continue;
      }
      end = phase === 'active' ? 'idle' : 'horizon';
      break;
    }
    if (turnsThisRun >= input.continueAsNewAfterTurns || workflowInfo().continueAsNewSuggested) {
      await allHandlersFinished();
      await takeInbox();
      // Every settlement awaits a child start, and signals may arrive meanwhile. The client may have ended the
      // session: it ends in this run (a new one would not know). Turns go with the carried state.
      if (keepsLateSignals && done) break;
      const carry: SessionCarry = {
        pairing: pairing.state(),
        phase,
        turnsReceived,
        turnsScored,
        turnsSuperseded,
        reopened,
        highestTurn,
        ...(keepsLateSignals && inbox.length > 0 && { inbox: inbox.splice(0) }),
        ...(takesFeedback && feedback.carry()),
      };
      await continueAsNew<typeof sessionWorkflow>({ ...input, carried: carry });
    }
  }

  // The session is over: open turns get no next state (superseded ones aside). Scoring records them.
  await allHandlersFinished();
  // Turns that arrive while it settles are settled too, until none is left.
  do {
    await takeInbox();
    for (const settlement of pairing.closeAll()) await settle(settlement);
  } while (keepsLateSignals && (inbox.length > 0 || (takesFeedback && feedback.inbox.length > 0)));
  return { sessionId: input.sessionId, end, turnsScored };
}

/** The carried state, also from a run of the sequential loop that continued as new into this code. */
function carriedState(carried: SessionInput['carried'], now: number): SessionCarry {
  if (carried === undefined)
    return {
      pairing: emptyPairingState(),
      phase: 'active',
      turnsReceived: 0,
      turnsScored: 0,
      turnsSuperseded: 0,
      reopened: 0,
      highestTurn: 0,
    };
  if ('pairing' in carried) return carried;
  const sequential: SequentialSessionCarry = carried;
  const open: OpenTurn[] = sequential.waiting.map((ref) => ({ ref, arrivedAt: now }));
  return {
    pairing: { open, settled: [], lastTurnAt: now },
    phase: 'active',
    turnsReceived: sequential.turnsScored + open.length,
    turnsScored: sequential.turnsScored,
    turnsSuperseded: 0,
    reopened: 0,
    highestTurn: Math.max(sequential.highestScored, ...open.map((t) => t.ref.turn)),
  };
}
