// Reading the judge's replies: binary votes and their majority (spec 4.3), hint votes and the choice of the
// hint (spec 6.1 step 3, 6.2). A reply of `null` stands for a judge call that failed; it counts as no vote.

import { codePointLength, pythonStrip } from './python-text.js';

/** The judge's verdict on a turn: good, neutral, bad. */
export type JudgeScore = 1 | 0 | -1;

/** `\boxed{d}` with one optional sign and one digit: `\boxed{10}` or `\boxed{ 1}` are not votes at all. */
const BOXED_DIGIT = /\\boxed\{([-+]?[0-9])\}/g;
const HINT_BLOCK = /\[HINT_START\]([\s\S]*?)\[HINT_END\]/g;

/** A hint must be longer than this many characters (after stripping) to be used (spec 6.1). */
export const MIN_HINT_LENGTH_EXCLUSIVE = 10;

export interface JudgeVote {
  /** The parsed vote, or null when the reply had none (or the call failed). */
  score: JudgeScore | null;
  /** The reply text; null when the judge call failed. */
  raw: string | null;
}

export interface HintVote {
  /** 1: the next state holds a useful hint; -1: it does not; null: no valid decision. */
  score: 1 | -1 | null;
  /** The last hint block, stripped; '' when there is none. */
  hint: string;
  raw: string | null;
}

export type VoteOutcome = 'majority' | 'tie' | 'no-valid-votes';

export interface MajorityVote {
  score: JudgeScore;
  outcome: VoteOutcome;
  /** Valid votes by value, for logs and metrics. */
  counts: Record<'1' | '0' | '-1', number>;
  votes: JudgeVote[];
}

export type HintSelection =
  | { accepted: true; hint: string; voteIndex: number; votes: HintVote[] }
  | { accepted: false; reason: 'no-votes' | 'no-positive-vote' | 'hint-too-short'; votes: HintVote[] };

/** The value of the last `\boxed{d}` in a reply, or null when there is none. `-0` reads as 0. */
function lastBoxedDigit(text: string): number | null {
  let last: string | undefined;
  for (const match of text.matchAll(BOXED_DIGIT)) last = match[1];
  if (last === undefined) return null;
  const value = Number(last);
  return value === 0 ? 0 : value;
}

/** A binary judge reply's vote: the last `\boxed{d}`, valid only for 1, -1 and 0 (a later `\boxed{2}` voids it). */
export function parseJudgeVote(raw: string | null): JudgeVote {
  if (raw === null) return { score: null, raw };
  const value = lastBoxedDigit(raw);
  const score = value === 1 || value === -1 || value === 0 ? value : null;
  return { score, raw };
}

/**
 * Majority of the valid votes: no valid vote gives 0, and so does a tie for the most votes, e.g.
 * [1, 1, -1] → 1, [1, -1, 0] → 0, [1, null, null] → 1.
 */
export function majorityVote(votes: readonly JudgeVote[]): MajorityVote {
  const counts: MajorityVote['counts'] = { '1': 0, '0': 0, '-1': 0 };
  for (const vote of votes) if (vote.score !== null) counts[`${vote.score}`]++;
  const ranked = (Object.entries(counts) as [keyof typeof counts, number][])
    .filter(([, count]) => count > 0)
    .sort((a, b) => b[1] - a[1]);
  const [top, runnerUp] = ranked;
  const copy = [...votes];
  if (top === undefined) return { score: 0, outcome: 'no-valid-votes', counts, votes: copy };
  if (runnerUp !== undefined && runnerUp[1] === top[1])
    return { score: 0, outcome: 'tie', counts, votes: copy };
  return { score: Number(top[0]) as JudgeScore, outcome: 'majority', counts, votes: copy };
}

/** A hint judge reply: decision = last `\boxed{d}` if it is 1 or -1; hint = the last hint block, stripped. */
export function parseHintVote(raw: string | null): HintVote {
  if (raw === null) return { score: null, hint: '', raw };
  const value = lastBoxedDigit(raw);
  let hint = '';
  for (const match of raw.matchAll(HINT_BLOCK)) hint = match[1] ?? '';
  return { score: value === 1 || value === -1 ? value : null, hint: pythonStrip(hint), raw };
}

/**
 * The hint to distil from: among votes that said 1 and carry a hint longer than 10 characters, the longest
 * (the earliest of equally long ones). Without one, the turn has no teacher.
 */
export function selectHint(votes: readonly HintVote[]): HintSelection {
  const copy = [...votes];
  if (copy.length === 0) return { accepted: false, reason: 'no-votes', votes: copy };
  let best: { index: number; hint: string; length: number } | undefined;
  let positives = 0;
  for (const [index, vote] of copy.entries()) {
    if (vote.score !== 1) continue;
    positives++;
    const hint = pythonStrip(vote.hint);
    const length = codePointLength(hint);
    if (length <= MIN_HINT_LENGTH_EXCLUSIVE) continue;
    if (best === undefined || length > best.length) best = { index, hint, length };
  }
  if (best !== undefined) return { accepted: true, hint: best.hint, voteIndex: best.index, votes: copy };
  return { accepted: false, reason: positives === 0 ? 'no-positive-vote' : 'hint-too-short', votes: copy };
}

/**
 * A Track 2 step's score from its votes (spec 10.2-10.4): the mean of the valid ±1 votes, 0 when there is
 * none (a 0, a missing score or a failed call is no vote). [1, 1, -1] → 1/3, [1, null] → 1, [0] → 0.
 */
export function meanStepVote(votes: readonly JudgeVote[]): number {
  const valid = votes.filter((vote) => vote.score === 1 || vote.score === -1);
  if (valid.length === 0) return 0;
  return valid.reduce((sum, vote) => sum + (vote.score as number), 0) / valid.length;
}
