// Where the gateway takes explicit feedback: finds the turn it is about (within the caller's tenant only),
// and stores each piece of feedback durably together with the outbox entry that hands it to the turn's session
// workflow, exactly as turns are (so feedback is accepted while Temporal is down and delivered after). The same
// feedback sent twice is one record: its id is a digest of the turn, the rating and the correction.

import { createHash } from 'node:crypto';
import { type FeedbackNote, type FeedbackRecord, feedbackKey } from '../core/feedback.js';
import { parseTurnSampleId } from '../core/sample-id.js';
import { sessionTurnsPrefix, type TurnRecord, turnRecordKey } from '../core/turn-record.js';
import { feedbackEntry, type OutboxWorkflow } from '../store/outbox.js';
import type { SampleStore } from '../store/sample-store.js';
import { DEFAULT_RETRY, type RetryOptions, withRetry } from './retry.js';

/** The turn a piece of feedback is about, as recorded. */
export type FeedbackTurn = Pick<TurnRecord, 'sampleId' | 'sessionId' | 'turn' | 'recordedAt'>;

/** Turns one session-wide feedback reaches at most (the latest of each position). */
export const MAX_SESSION_FEEDBACK_TURNS = 500;

export interface FeedbackDeskOptions {
  store: SampleStore;
  /** The session workflow a session's entries start (the same as its turns'). */
  workflowOf: (sessionId: string) => OutboxWorkflow;
  retry?: RetryOptions;
  /** Called after an entry was queued (the gateway nudges its relay). */
  onQueued?: () => void;
}

export class FeedbackDesk {
  private readonly retry: RetryOptions;

  constructor(private readonly options: FeedbackDeskOptions) {
    this.retry = options.retry ?? DEFAULT_RETRY;
  }

  /** The recorded turn with this sample id, or null (none, or a malformed id). */
  async turn(sampleId: string): Promise<FeedbackTurn | null> {
    const key = turnRecordKey(sampleId);
    if (key === null) return null;
    const record = await this.io(() => this.options.store.get<TurnRecord>(key));
    return record ? pick(record) : null;
  }

  /**
   * The session's main turns: at `position` (or, without one, the highest position), the one recorded last
   * among its siblings; with `every`, the latest of every position, oldest first.
   */
  async sessionTurns(
    sessionId: string,
    target: { position?: number; every?: boolean },
  ): Promise<FeedbackTurn[]> {
    const prefix = sessionTurnsPrefix(sessionId);
    const keys = await this.io(() => this.options.store.list(prefix));
    const byPosition = new Map<number, string[]>();
    for (const key of keys) {
      const turnKey = decodeURIComponent(key.slice(prefix.length + 1));
      const parsed = parseTurnSampleId(`${sessionId}:${turnKey}`);
      if (parsed === null || key.slice(prefix.length + 1).includes('/')) continue;
      byPosition.set(parsed.turn, [...(byPosition.get(parsed.turn) ?? []), key]);
    }
    const positions = [...byPosition.keys()].sort((a, b) => a - b);
    const wanted = target.every
      ? positions.slice(-MAX_SESSION_FEEDBACK_TURNS)
      : [target.position ?? positions.at(-1)].filter((p): p is number => p !== undefined);
    const turns: FeedbackTurn[] = [];
    for (const position of wanted) {
      const records = await Promise.all(
        (byPosition.get(position) ?? []).map((key) => this.io(() => this.options.store.get<TurnRecord>(key))),
      );
      const latest = records
        .filter((record): record is TurnRecord => record !== undefined)
        .sort((a, b) => (a.recordedAt < b.recordedAt ? -1 : a.recordedAt > b.recordedAt ? 1 : 0))
        .at(-1);
      if (latest) turns.push(pick(latest));
    }
    return turns;
  }

  /**
   * Stores the feedback and its outbox entry (durable when this resolves); the same feedback again is the record
   * already there, and its entry is queued again (the session ignores a feedback id it has handled).
   */
  async record(
    turn: FeedbackTurn,
    given: { rating: number | null; correction: string | null; keyName: string },
    now = new Date(),
  ): Promise<{ record: FeedbackRecord; created: boolean }> {
    const id = feedbackId(turn.sampleId, given.rating, given.correction);
    const fresh: FeedbackRecord = {
      id,
      sampleId: turn.sampleId,
      sessionId: turn.sessionId,
      rating: given.rating,
      correction: given.correction,
      receivedAt: now.toISOString(),
      keyName: given.keyName,
    };
    const note: FeedbackNote = {
      feedbackId: id,
      sampleId: turn.sampleId,
      rating: given.rating,
      hasCorrection: given.correction !== null,
    };
    const { store } = this.options;
    const key = feedbackKey(turn.sampleId, id);
    const entry = feedbackEntry(turn.sessionId, note, this.options.workflowOf(turn.sessionId));
    const created = await this.io(() => store.putIfAbsent(key, fresh, { outbox: entry }));
    let record = fresh;
    if (!created) {
      record = (await this.io(() => store.get<FeedbackRecord>(key))) ?? fresh;
      // A record written just before a crash gets its entry this way; a delivered one is ignored by its session.
      await this.io(() => store.outbox.enqueue(entry));
    }
    this.options.onQueued?.();
    return { record, created };
  }

  private io<T>(operation: () => Promise<T>): Promise<T> {
    return withRetry(operation, this.retry);
  }
}

/** `fb-` + 16 hex digits of SHA-256 over the turn, the rating and the correction. */
export function feedbackId(sampleId: string, rating: number | null, correction: string | null): string {
  const digest = createHash('sha256')
    .update(JSON.stringify([sampleId, rating, correction]))
    .digest('hex');
  return `fb-${digest.slice(0, 16)}`;
}

function pick(record: TurnRecord): FeedbackTurn {
  return {
    sampleId: record.sampleId,
    sessionId: record.sessionId,
    turn: record.turn,
    recordedAt: record.recordedAt,
  };
}
