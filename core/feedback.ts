// Explicit feedback on a main turn: a rating in [-1, 1] (thumbs are 1 / -1) and/or a correction (what the user
// meant). The gateway stores each one durably beside the turn and hands a small note to the session workflow;
// scoring reads the records back and turns them into the reward and the hindsight hint (docs/scoring.md#feedback).
// Pure: workflows import the note's shape and the scoring rules.

import { z } from 'zod';

/** How a rating meets the judge's votes: it is the reward (`override`), or one more vote (`join`). */
export const FEEDBACK_RATING_MODES = ['override', 'join'] as const;
export type FeedbackRatingMode = (typeof FEEDBACK_RATING_MODES)[number];

/** How a correction becomes the teacher's hint: verbatim (`as-given`), or through the hint judge (`judged`). */
export const FEEDBACK_CORRECTION_MODES = ['as-given', 'judged'] as const;
export type FeedbackCorrectionMode = (typeof FEEDBACK_CORRECTION_MODES)[number];

export interface FeedbackSettings {
  rating: FeedbackRatingMode;
  correction: FeedbackCorrectionMode;
}

export const DEFAULT_FEEDBACK_SETTINGS: FeedbackSettings = { rating: 'override', correction: 'as-given' };

/** Longest correction accepted (characters): a hint, not a document. */
export const MAX_CORRECTION_CHARS = 8_000;

/** `POST /v1/feedback`'s body (the gateway validates it; docs/gateway.md#feedback). */
export const feedbackRequestSchema = z
  .strictObject({
    turn_id: z.string().min(1).max(1_000).optional(),
    session_id: z.union([z.string().min(1).max(1_000), z.number()]).optional(),
    /** With session_id: the turn's 1-based position (the latest turn recorded there); absent: the latest turn. */
    position: z.number().int().min(1).optional(),
    /** `session`: the rating applies to every main turn the session has recorded so far. */
    scope: z.enum(['turn', 'session']).default('turn'),
    rating: z.number().min(-1).max(1).optional(),
    correction: z.string().trim().min(1).max(MAX_CORRECTION_CHARS).optional(),
  })
  .superRefine((body, ctx) => {
    const targets = (body.turn_id !== undefined ? 1 : 0) + (body.session_id !== undefined ? 1 : 0);
    if (targets !== 1)
      ctx.addIssue({
        code: 'custom',
        path: ['turn_id'],
        message: 'give exactly one of turn_id and session_id',
      });
    if (body.rating === undefined && body.correction === undefined)
      ctx.addIssue({ code: 'custom', path: ['rating'], message: 'give a rating, a correction, or both' });
    if (body.position !== undefined && body.session_id === undefined)
      ctx.addIssue({ code: 'custom', path: ['position'], message: 'position needs session_id' });
    if (body.scope === 'session') {
      if (body.session_id === undefined)
        ctx.addIssue({ code: 'custom', path: ['scope'], message: 'scope "session" needs session_id' });
      if (body.position !== undefined)
        ctx.addIssue({ code: 'custom', path: ['position'], message: 'scope "session" takes no position' });
      if (body.correction !== undefined)
        ctx.addIssue({
          code: 'custom',
          path: ['correction'],
          message: 'a correction says what one reply should have been: send it on a turn, not a session',
        });
    }
  });

export type FeedbackRequest = z.output<typeof feedbackRequestSchema>;

/** What the store keeps for one piece of feedback (`feedback/<sampleId>/<feedbackId>`). */
export interface FeedbackRecord {
  /** `fb-` + a digest of the turn, the rating and the correction: the same feedback twice is one record. */
  id: string;
  sampleId: string;
  sessionId: string;
  rating: number | null;
  correction: string | null;
  /** ISO time the gateway accepted it. */
  receivedAt: string;
  /** The API key's name that sent it (empty on an open gateway). */
  keyName: string;
}

/** What the session workflow is told of a piece of feedback (the correction's text stays in the store). */
export interface FeedbackNote {
  feedbackId: string;
  sampleId: string;
  rating: number | null;
  hasCorrection: boolean;
}

/** Store key of one piece of feedback, and the folder of a turn's feedback. */
export function feedbackKey(sampleId: string, feedbackId: string): string {
  return [feedbackPrefix(sampleId), encodeURIComponent(feedbackId)].join('/');
}

export function feedbackPrefix(sampleId: string): string {
  return ['feedback', sampleId].map(encodeURIComponent).join('/');
}

/** A turn's feedback taken together: the latest rating and the latest correction (by when they came). */
export interface EffectiveFeedback {
  rating: number | null;
  correction: string | null;
  feedbackIds: string[];
}

export function effectiveFeedback(records: readonly FeedbackRecord[]): EffectiveFeedback {
  const ordered = [...records].sort((a, b) =>
    a.receivedAt === b.receivedAt ? (a.id < b.id ? -1 : 1) : a.receivedAt < b.receivedAt ? -1 : 1,
  );
  let rating: number | null = null;
  let correction: string | null = null;
  for (const record of ordered) {
    if (record.rating !== null) rating = record.rating;
    if (record.correction !== null) correction = record.correction;
  }
  return { rating, correction, feedbackIds: ordered.map((record) => record.id) };
}

/**
 * The turn's reward signal from feedback and the judge's votes (null: none). A correction without a rating
 * says the reply was wrong: it counts as a rating of -1. `override`: the rating is the reward (0: neutral);
 * `join`: the rating's sign is one more vote beside the judge's, and the majority decides (a tie: 0).
 */
export function feedbackScore(
  feedback: Pick<EffectiveFeedback, 'rating' | 'correction'>,
  judgeVotes: readonly (number | null)[] | null,
  mode: FeedbackRatingMode,
): number | null {
  const rating = feedback.rating ?? (feedback.correction !== null ? -1 : null);
  if (rating === null) return null;
  if (mode === 'override') return rating;
  const votes = [...(judgeVotes ?? []).filter((v): v is number => v !== null), Math.sign(rating)];
  const sum = votes.reduce((total, vote) => total + Math.sign(vote), 0);
  return Math.sign(sum);
}

/** Whether scoring needs the judge on the next state when the turn has feedback. */
export function feedbackNeedsJudge(
  method: 'rl' | 'opd' | 'combine',
  feedback: { rating: number | null; hasCorrection: boolean },
  mode: FeedbackRatingMode,
): { eval: boolean; hint: boolean } {
  const rated = feedback.rating !== null || feedback.hasCorrection;
  return {
    eval: method !== 'opd' && (mode === 'join' || !rated),
    hint: method !== 'rl' && !feedback.hasCorrection,
  };
}
