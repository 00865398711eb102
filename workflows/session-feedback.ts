// What a session does with explicit feedback (core/feedback.ts), as deterministic workflow code: feedback on a
// turn still waiting for its next state scores it now; feedback on a turn already scored scores it again (the
// training run then replaces its sample if it has not trained, docs/scoring.md#feedback); and when the next
// state of a turn scored early arrives, the turn is scored again with it where the method still asks the judge.
// Each scoring is a child workflow under an id of its own, so a feedback delivered twice scores once.

import {
  DEFAULT_FEEDBACK_SETTINGS,
  type FeedbackNote,
  type FeedbackSettings,
  feedbackNeedsJudge,
} from '../core/feedback.js';
import { parseTurnSampleId } from '../core/sample-id.js';
import type { TurnRef } from '../core/types.js';
import { startScoreTurn } from './score-turn-child.js';
import type { ScoreTurnInput } from './score-turn-workflow.js';
import type { SessionCarry, SessionFeedbackState, SessionInput } from './session-signals.js';

/** Feedback ids, early-scored turns and next states remembered (a session's recent past; ids dedupe the rest). */
const REMEMBERED = 256;

export class SessionFeedback {
  /** Notes delivered and not yet handled, in delivery order. */
  readonly inbox: FeedbackNote[];
  received = 0;
  amendments = 0;
  private readonly settings: FeedbackSettings;
  private readonly seen: string[];
  private readonly scoredEarly: SessionFeedbackState['scoredEarly'];
  private readonly nextOf: Map<string, string>;

  constructor(
    private readonly input: SessionInput,
    carried: SessionFeedbackState | undefined,
    carriedInbox: FeedbackNote[] | undefined,
  ) {
    this.settings = input.feedback ?? DEFAULT_FEEDBACK_SETTINGS;
    this.inbox = [...(carriedInbox ?? [])];
    this.seen = [...(carried?.seen ?? [])];
    this.scoredEarly = (carried?.scoredEarly ?? []).map((entry) => ({ ...entry }));
    this.nextOf = new Map(carried?.nextOf ?? []);
  }

  /** An open turn got feedback: scored now, without waiting for its next state. */
  async scoreOpenTurn(turn: TurnRef, note: FeedbackNote): Promise<void> {
    if (!this.firstDelivery(note)) return;
    await startScoreTurn(this.scoreInput(turn, null));
    this.remember(this.scoredEarly, { sampleId: turn.sampleId, ...noteSays(note) });
  }

  /** Feedback on a turn that was scored already (or is being scored): it is scored again, with it. */
  async scoreAgain(note: FeedbackNote): Promise<void> {
    if (!this.firstDelivery(note)) return;
    const turn = refOfSampleId(this.input.sessionId, note.sampleId);
    if (turn === null) return;
    const early = this.scoredEarly.find((entry) => entry.sampleId === note.sampleId);
    if (early) {
      // Its feedback now says both what it said and what this note says.
      if (note.rating !== null) early.rating = note.rating;
      early.hasCorrection ||= note.hasCorrection;
    }
    const next = this.nextOf.get(note.sampleId) ?? null;
    if (await startScoreTurn({ ...this.scoreInput(turn, next), amendment: { key: note.feedbackId } }))
      this.amendments++;
  }

  /** A turn continues `continuedId`: if that turn was scored on its feedback, its next state is judged now. */
  async nextStateArrived(continuedId: string, nextSampleId: string): Promise<void> {
    this.noteNextState(continuedId, nextSampleId);
    const index = this.scoredEarly.findIndex((entry) => entry.sampleId === continuedId);
    if (index < 0) return;
    const [early] = this.scoredEarly.splice(index, 1);
    if (early === undefined) return;
    const needs = feedbackNeedsJudge(this.input.method, early, this.settings.rating);
    if (!needs.eval && !needs.hint) return;
    const turn = refOfSampleId(this.input.sessionId, continuedId);
    if (turn === null) return;
    if (await startScoreTurn({ ...this.scoreInput(turn, nextSampleId), amendment: { key: 'next' } }))
      this.amendments++;
  }

  noteNextState(sampleId: string, nextSampleId: string): void {
    this.nextOf.set(sampleId, nextSampleId);
    while (this.nextOf.size > REMEMBERED) {
      const oldest = this.nextOf.keys().next().value;
      if (oldest === undefined) break;
      this.nextOf.delete(oldest);
    }
  }

  carry(): Pick<SessionCarry, 'feedback' | 'feedbackInbox'> {
    return {
      feedback: {
        seen: [...this.seen],
        scoredEarly: this.scoredEarly.map((entry) => ({ ...entry })),
        nextOf: [...this.nextOf.entries()],
      },
      ...(this.inbox.length > 0 && { feedbackInbox: this.inbox.splice(0) }),
    };
  }

  private scoreInput(turn: TurnRef, nextSampleId: string | null): ScoreTurnInput {
    const { input } = this;
    return {
      runId: input.runId,
      method: input.method,
      judgeVotes: input.judgeVotes,
      ...(input.heartbeatTimeoutMs !== undefined && { heartbeatTimeoutMs: input.heartbeatTimeoutMs }),
      turn,
      nextSampleId,
      feedback: this.settings,
    };
  }

  /** False for a feedback id already handled (delivered twice). */
  private firstDelivery(note: FeedbackNote): boolean {
    if (this.seen.includes(note.feedbackId)) return false;
    this.received++;
    this.remember(this.seen, note.feedbackId);
    return true;
  }

  private remember<T>(list: T[], item: T): void {
    list.push(item);
    if (list.length > REMEMBERED) list.splice(0, list.length - REMEMBERED);
  }
}

function noteSays(note: FeedbackNote): { rating: number | null; hasCorrection: boolean } {
  return { rating: note.rating, hasCorrection: note.hasCorrection };
}

/** The ref scoring needs of a turn known only by its sample id (scoring reads everything else from its record). */
function refOfSampleId(sessionId: string, sampleId: string): TurnRef | null {
  const parsed = parseTurnSampleId(sampleId);
  if (parsed === null || parsed.sessionId !== sessionId) return null;
  return { sessionId, turn: parsed.turn, sampleId, policyVersion: 0, kind: 'main' };
}
