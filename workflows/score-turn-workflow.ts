// Scores one main turn once its next state is known (spec 4, 6, 7): m judge votes in parallel, hint votes
// and teacher log-probs for opd/combine, then exactly one sample or one recorded exclusion, handed to the
// training run. Every step is an activity with retries; a judge that keeps failing becomes a missing vote,
// and a turn no judge could score becomes an exclusion with its reason, never a lost turn.
import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { AssembleSampleInput, ScoringActivities } from '../activities/scoring-activities.js';
import { type FeedbackSettings, feedbackNeedsJudge, feedbackScore } from '../core/feedback.js';
import {
  type JudgeScore,
  type JudgeVote,
  majorityVote,
  parseHintVote,
  parseJudgeVote,
  selectHint,
} from '../core/judge-votes.js';
import { TEACHER_TEMPERATURE_REFUSED } from '../core/teacher-temperature.js';
import type { Method, SupersededPolicy, TurnRef } from '../core/types.js';
import { scoringStoreWrites } from './activity-options.js';
import type { SampleDelivery } from './training-signals.js';

export interface ScoreTurnInput {
  runId: string;
  method: Method;
  judgeVotes: number;
  /** Heartbeat timeout of the judge and teacher activities (default 30 s). */
  heartbeatTimeoutMs?: number;
  turn: TurnRef;
  /** The turn whose request carries this turn's next state; null when the session ended first. */
  nextSampleId: string | null;
  /**
   * Set when the conversation continued from another response to the same request (`by`): the turn is
   * settled without a judge, as an exclusion or (`negative`, rl and combine) a sample with reward -1.
   */
  superseded?: { by: string; as: SupersededPolicy };
  /**
   * The turn has explicit feedback (in the store, core/feedback.ts): it is scored from it, with the judge only
   * where the method still needs it (docs/scoring.md#feedback). Absent: the judge alone, as before feedback.
   */
  feedback?: FeedbackSettings;
  /**
   * Set on a later scoring of a turn already scored (feedback that came after, or the next state after a scoring
   * on feedback): `key` names this scoring (its workflow id's suffix), and the sample it makes amends the first.
   */
  amendment?: { key: string };
}

/** Judge and teacher calls: long, heartbeating, and a judge gets a bounded number of attempts. */
function modelCalls(heartbeatTimeoutMs: number) {
  return proxyActivities<ScoringActivities>({
    startToCloseTimeout: '15 minutes',
    heartbeatTimeout: heartbeatTimeoutMs,
    retry: {
      initialInterval: '2 seconds',
      backoffCoefficient: 2,
      maximumInterval: '1 minute',
      maximumAttempts: 5,
    },
  });
}

const scoring = proxyActivities<ScoringActivities>(scoringStoreWrites);

/** A judge call that exhausted its retries counts as no vote (spec 4.3: a failed call is `None`). */
async function vote(call: () => Promise<string>): Promise<string | null> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ActivityFailure) return null;
    throw error;
  }
}

/** Why a turn has no teacher log-probs: the teacher's refusal as it said it, else failed retries. */
function teacherFailure(error: ActivityFailure): string {
  const cause = error.cause;
  if (cause instanceof ApplicationFailure && cause.type === TEACHER_TEMPERATURE_REFUSED)
    return `the teacher refused: ${cause.message}`;
  // An engine's refusal of the prompt (scoring-activities.ts): its message says so already.
  if (cause instanceof ApplicationFailure && cause.type === 'TeacherRefused') return cause.message;
  return 'teacher log-probs failed after retries';
}

export async function scoreTurnWorkflow(input: ScoreTurnInput): Promise<SampleDelivery> {
  const { sampleId } = input.turn;
  const judge = modelCalls(input.heartbeatTimeoutMs ?? 30_000);
  const finish = async (result: SampleDelivery): Promise<SampleDelivery> => {
    await scoring.deliverToTraining({ runId: input.runId, method: input.method, result });
    return result;
  };

  if (input.feedback !== undefined) return scoreWithFeedback(input, input.feedback, finish);

  if (input.superseded) {
    const { by, as } = input.superseded;
    if (as === 'negative' && input.method !== 'opd') {
      // The user asked for another answer to the same request: a vote of -1, without asking a judge.
      const assembled = await scoring.assembleSample({
        method: input.method,
        sampleId,
        evalScore: -1,
        hint: null,
        teacherStored: false,
        judgeRecord: { evalVotes: null, hintVotes: null, hint: null, supersededBy: by },
      });
      return finish(assembled);
    }
    const exclusion = await scoring.recordExclusion({
      sampleId,
      reason: 'superseded',
      detail: `the conversation continued from another response to the same request (${by})`,
    });
    return finish({ ok: false, exclusion });
  }

  if (input.nextSampleId === null) {
    const exclusion = await scoring.recordExclusion({
      sampleId,
      reason: 'no-next-state',
      detail: 'the session ended before a next state arrived for this turn',
    });
    return finish({ ok: false, exclusion });
  }

  const target = { sampleId, nextSampleId: input.nextSampleId };
  const votes = Array.from({ length: input.judgeVotes }, (_, voteIndex) => voteIndex);
  const wantsEval = input.method === 'rl' || input.method === 'combine';
  const wantsHint = input.method === 'opd' || input.method === 'combine';

  // Eval and hint votes run concurrently (the original ran them one after the other).
  const [evalRaw, hintRaw] = await Promise.all([
    wantsEval
      ? Promise.all(votes.map((i) => vote(() => judge.judgeVote({ ...target, kind: 'eval', voteIndex: i }))))
      : null,
    wantsHint
      ? Promise.all(votes.map((i) => vote(() => judge.judgeVote({ ...target, kind: 'hint', voteIndex: i }))))
      : null,
  ]);

  const evalVotes: JudgeVote[] | null = evalRaw?.map(parseJudgeVote) ?? null;
  const hint = hintRaw ? selectHint(hintRaw.map(parseHintVote)) : null;
  const allFailed = [...(evalRaw ?? []), ...(hintRaw ?? [])].every((raw) => raw === null);
  if (allFailed) {
    const exclusion = await scoring.recordExclusion({
      sampleId,
      reason: 'judge-failed',
      detail: `every judge call failed after retries (${votes.length} vote(s) per prompt)`,
    });
    return finish({ ok: false, exclusion });
  }

  let hintOutcome: AssembleSampleInput['hint'] =
    hint === null ? null : hint.accepted ? { accepted: true } : { accepted: false, reason: hint.reason };
  let teacherStored = false;
  if (hint?.accepted) {
    try {
      await judge.computeTeacherLogprobs({ sampleId, hint: hint.hint });
      teacherStored = true;
    } catch (error) {
      // No teacher after retries: the turn keeps whatever signal it has without one (combine: its vote).
      if (!(error instanceof ActivityFailure)) throw error;
      hintOutcome = { accepted: false, reason: teacherFailure(error) };
    }
  }

  const assembled = await scoring.assembleSample({
    method: input.method,
    sampleId,
    evalScore: evalVotes ? majorityVote(evalVotes).score : null,
    hint: hintOutcome,
    teacherStored,
    judgeRecord: {
      evalVotes: evalVotes?.map((v) => v.score) ?? null,
      hintVotes: hint?.votes.map((v) => v.score) ?? null,
      hint: hint?.accepted ? hint.hint : null,
    },
  });
  return finish(assembled);
}

/**
 * A turn with explicit feedback: the rating (or a correction's implied -1) is the reward or joins the judge's
 * votes; a correction is the hint (as given, or through the hint judge with the correction as the next state);
 * the judge is asked on the next state only for what feedback does not say. A later scoring (`amendment`) that
 * has no next state reuses the judge's votes and hint of the turn's first scoring.
 */
async function scoreWithFeedback(
  input: ScoreTurnInput,
  settings: FeedbackSettings,
  finish: (result: SampleDelivery) => Promise<SampleDelivery>,
): Promise<SampleDelivery> {
  const { sampleId } = input.turn;
  const { method, nextSampleId } = input;
  const judge = modelCalls(input.heartbeatTimeoutMs ?? 30_000);
  const feedback = await scoring.loadFeedback({ sampleId });
  const prior = input.amendment !== undefined ? await scoring.priorJudgement({ sampleId }) : null;
  const needs = feedbackNeedsJudge(
    method,
    { rating: feedback.rating, hasCorrection: feedback.correction !== null },
    settings.rating,
  );
  const votes = Array.from({ length: input.judgeVotes }, (_, voteIndex) => voteIndex);
  const ask = (kind: 'eval' | 'hint', fromCorrection: boolean) =>
    Promise.all(
      votes.map((i) =>
        vote(() =>
          judge.judgeVote({
            sampleId,
            nextSampleId: fromCorrection ? null : nextSampleId,
            kind,
            voteIndex: i,
            ...(fromCorrection && { nextStateFromCorrection: true }),
          }),
        ),
      ),
    );

  const hintFromCorrection =
    method !== 'rl' && feedback.correction !== null && settings.correction === 'judged';
  const [evalRaw, hintRaw] = await Promise.all([
    needs.eval && nextSampleId !== null ? ask('eval', false) : null,
    hintFromCorrection ? ask('hint', true) : needs.hint && nextSampleId !== null ? ask('hint', false) : null,
  ]);
  const evalVotes = evalRaw ? evalRaw.map((raw) => parseJudgeVote(raw).score) : (prior?.evalVotes ?? null);
  const judgeScore = evalVotes
    ? majorityVote(evalVotes.map((score) => ({ score: score as JudgeScore | null, raw: '' }))).score
    : null;
  const evalScore =
    method === 'opd'
      ? null
      : (feedbackScore(feedback, needs.eval ? evalVotes : null, settings.rating) ?? judgeScore);

  // The hint: the correction as given, else the hint judge's pick (of the correction or the next state), else
  // the first scoring's accepted hint.
  let hintText: string | null = null;
  let hintOutcome: AssembleSampleInput['hint'] = null;
  let hintVotes: (number | null)[] | null = null;
  if (method !== 'rl') {
    if (feedback.correction !== null && settings.correction === 'as-given') hintText = feedback.correction;
    else if (hintRaw) {
      const picked = selectHint(hintRaw.map(parseHintVote));
      hintVotes = picked.votes.map((v) => v.score);
      if (picked.accepted) hintText = picked.hint;
      else hintOutcome = { accepted: false, reason: picked.reason };
    } else if (prior?.hint) hintText = prior.hint;
    else hintOutcome = { accepted: false, reason: 'no correction, and no next state to judge yet' };
  }
  const storeAs = input.amendment ? amendedSampleId(sampleId, input.amendment.key) : sampleId;
  let teacherStored = false;
  if (hintText !== null) {
    hintOutcome = { accepted: true };
    try {
      await judge.computeTeacherLogprobs({ sampleId, hint: hintText, storeAs });
      teacherStored = true;
    } catch (error) {
      if (!(error instanceof ActivityFailure)) throw error;
      hintOutcome = { accepted: false, reason: teacherFailure(error) };
      hintText = null;
    }
  }

  const revision = feedback.feedbackIds.length * 2 + (nextSampleId !== null ? 1 : 0);
  const assembled = await scoring.assembleSample({
    method,
    sampleId,
    evalScore,
    hint: hintOutcome,
    teacherStored,
    judgeRecord: {
      evalVotes: evalVotes ?? null,
      hintVotes: hintVotes ?? (hintRaw === null ? (prior?.hintVotes ?? null) : null),
      hint: hintText,
      feedback: {
        rating: feedback.rating,
        correction: feedback.correction,
        feedbackIds: feedback.feedbackIds,
      },
      ...(nextSampleId !== null && { nextSampleId }),
    },
    ...(input.amendment && {
      amendment: { id: storeAs, revision, feedbackIds: feedback.feedbackIds },
    }),
  });
  return finish(assembled);
}

/** The id a later scoring of a turn stores its sample under (the trainer reads it like any other). */
export function amendedSampleId(sampleId: string, key: string): string {
  return `${sampleId}~${key}`;
}
