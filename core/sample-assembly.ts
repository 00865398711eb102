// From a scored turn to at most one training sample, per method (spec 5, 6.5 and the table of section 7).
// A turn without a training signal becomes an exclusion with its reason instead of a zero-mask sample, so it
// never takes a batch slot (spec 13, item 13).

import type { ImageRefPart } from './image-parts.js';
import type { JudgeScore } from './judge-votes.js';
import type {
  Method,
  SampleExclusion,
  SampleExclusionReason,
  SampleKind,
  TeacherTopK,
  TrainingSample,
} from './types.js';

/** A main turn as the gateway captured it: exact prompt and sampled response tokens. */
export interface CapturedTurn {
  /** The id the turn was recorded under; its sample keeps it. */
  sampleId: string;
  sessionId: string;
  turn: number;
  promptIds: readonly number[];
  responseIds: readonly number[];
  /** The engine's log-prob of each sampled response token. */
  responseLogProbs: readonly number[];
  policyVersion: number;
  /** Temperature of those log-probs (core/logprob-temperature.ts); absent: 1. */
  temperature?: number;
  /**
   * The request fields that shaped the sampled distribution beyond what training replays (the turn record's
   * `sampling.constraints`); any makes the turn a `constrained-sampling` exclusion.
   */
  constraints?: readonly string[];
  /** The prompt's image refs in prompt order (`imageRefsOf(record.messages)`); the ids hold their pad tokens. */
  images?: readonly ImageRefPart[];
}

/** Whether the hint judge produced a hint; `HintSelection` from judge-votes fits. */
export type HintOutcome = { accepted: true } | { accepted: false; reason: string };

/** What scoring found out about the turn. */
export interface TurnScoring {
  /**
   * Majority of the binary judge's votes, or the reward explicit feedback gives (any value in [-1, 1]); null when
   * neither says anything.
   */
  evalScore: JudgeScore | number | null;
  /** The hint judge's selection; null when the hint judge was not asked. */
  hint: HintOutcome | null;
  /** Teacher log-probs of the response tokens under the hinted prompt; needed when a hint was accepted. */
  teacherLogProbs?: readonly number[] | null;
  teacherTopK?: TeacherTopK | null;
}

export type SampleAssembly = { ok: true; sample: TrainingSample } | { ok: false; exclusion: SampleExclusion };

/**
 * The sample a turn trains, or why it trains none:
 * - rl: judge vote +1 or -1 → reward = vote; 0 (neutral, tie, no valid vote) or not judged → excluded.
 * - opd: accepted hint → teacher log-probs, reward 0; otherwise excluded.
 * - combine: hint and vote → opd+rl; hint only → opd (reward 0); vote only → rl with no teacher, whose teacher
 *   term every trainer makes exactly 0 (the original used the rollout log-probs as the teacher, which is 0 only
 *   when π_old is exactly the sampling distribution); neither → excluded.
 * Whatever the method, a reply drawn under a constraint training does not replay is excluded first.
 */
export function assembleSample(method: Method, turn: CapturedTurn, scoring: TurnScoring): SampleAssembly {
  const { sampleId } = turn;
  const exclude = (reason: SampleExclusionReason, detail: string): SampleAssembly => ({
    ok: false,
    exclusion: { sampleId, reason, detail },
  });

  if (turn.responseIds.length === 0) return exclude('empty-response', 'the response has no tokens');
  const invalid = invalidTurn(turn);
  if (invalid !== null) return exclude('invalid-input', invalid);
  // Its log-probs are not of the distribution the trainer recomputes as π_old: never trained as on-policy.
  if (turn.constraints && turn.constraints.length > 0)
    return exclude(
      'constrained-sampling',
      `the reply was drawn under ${turn.constraints.join(', ')}, which training does not replay`,
    );

  const vote = scoring.evalScore;
  // A judge's majority is 1 or -1; a person's rating may be any value in [-1, 1] (0: neutral).
  const hasVote = vote !== null && Number.isFinite(vote) && vote !== 0 && Math.abs(vote) <= 1;
  const hasHint = scoring.hint?.accepted === true;
  const hintDetail =
    scoring.hint === null ? 'the hint judge was not asked' : `no hint accepted (${hintReason(scoring.hint)})`;

  const build = (kind: SampleKind, reward: number, teacher: 'hinted' | 'none'): SampleAssembly => {
    const sample: TrainingSample = {
      sampleId,
      sessionId: turn.sessionId,
      turn: turn.turn,
      tokens: [...turn.promptIds, ...turn.responseIds],
      responseLength: turn.responseIds.length,
      lossMask: new Array<number>(turn.responseIds.length).fill(1),
      rolloutLogProbs: [...turn.responseLogProbs],
      reward,
      policyVersion: turn.policyVersion,
      method,
      kind,
    };
    if (turn.temperature !== undefined && turn.temperature !== 1) sample.temperature = turn.temperature;
    if (turn.images && turn.images.length > 0)
      sample.images = turn.images.map((ref) => ({ digest: ref.digest, mediaType: ref.media_type }));
    if (teacher === 'hinted') {
      const problem = invalidTeacher(turn.responseIds.length, scoring);
      if (problem !== null) return exclude('invalid-input', problem);
      sample.teacherLogProbs = [...(scoring.teacherLogProbs ?? [])];
      if (scoring.teacherTopK) {
        sample.teacherTopkLogProbs = scoring.teacherTopK.logProbs.map((row) => [...row]);
        sample.teacherTopkIndices = scoring.teacherTopK.tokenIds.map((row) => [...row]);
      }
    }
    return { ok: true, sample };
  };

  switch (method) {
    case 'rl':
      if (vote === null) return exclude('not-judged', 'the binary judge was not asked');
      return hasVote ? build('rl', vote, 'none') : exclude('neutral-score', `the judge vote is ${vote}`);
    case 'opd':
      return hasHint ? build('opd', 0, 'hinted') : exclude('no-hint', hintDetail);
    case 'combine':
      if (hasHint && hasVote) return build('opd+rl', vote, 'hinted');
      if (hasHint) return build('opd', 0, 'hinted');
      if (hasVote) return build('rl', vote, 'none');
      return exclude('no-signal', `${hintDetail}, and the judge vote is ${vote === null ? 'missing' : '0'}`);
  }
}

function hintReason(hint: HintOutcome): string {
  return hint.accepted ? 'accepted' : hint.reason;
}

function isTokenId(value: number): boolean {
  return Number.isInteger(value) && value >= 0;
}

/** A sentence naming what is wrong with the captured turn, or null. */
function invalidTurn(turn: CapturedTurn): string | null {
  if (!Number.isInteger(turn.policyVersion) || turn.policyVersion < 0) {
    return `policyVersion must be a non-negative integer, got ${turn.policyVersion}`;
  }
  if (turn.responseLogProbs.length !== turn.responseIds.length) {
    return `${turn.responseLogProbs.length} rollout log-probs for ${turn.responseIds.length} response tokens`;
  }
  if (!turn.promptIds.every(isTokenId) || !turn.responseIds.every(isTokenId)) {
    return 'token ids must be non-negative integers';
  }
  if (!turn.responseLogProbs.every(Number.isFinite)) return 'rollout log-probs must be finite numbers';
  if (turn.temperature !== undefined && !(Number.isFinite(turn.temperature) && turn.temperature > 0)) {
    return `the log-prob temperature must be a positive number, got ${turn.temperature}`;
  }
  return null;
}

/** A sentence naming what is wrong with the teacher's log-probs, or null. */
function invalidTeacher(responseLength: number, scoring: TurnScoring): string | null {
  const teacher = scoring.teacherLogProbs;
  if (!teacher) return 'a hint was accepted but there are no teacher log-probs';
  if (teacher.length !== responseLength) {
    return `${teacher.length} teacher log-probs for ${responseLength} response tokens`;
  }
  if (!teacher.every(Number.isFinite)) return 'teacher log-probs must be finite numbers';
  const topK = scoring.teacherTopK;
  if (topK) {
    if (topK.logProbs.length !== responseLength || topK.tokenIds.length !== responseLength) {
      return `teacher top-K rows do not match the ${responseLength} response tokens`;
    }
    const width = topK.logProbs[0]?.length ?? 0;
    const rowsOk = topK.logProbs.every(
      (row, i) => row.length === width && row.every(Number.isFinite) && topK.tokenIds[i]?.length === width,
    );
    if (width === 0 || !rowsOk || !topK.tokenIds.every((row) => row.every(isTokenId))) {
      return 'teacher top-K rows must all hold the same number (>= 1) of finite log-probs and token ids';
    }
  }
  return null;
}
