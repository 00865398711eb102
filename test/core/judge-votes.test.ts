import { describe, expect, it } from 'vitest';
import {
  type HintVote,
  type JudgeVote,
  majorityVote,
  parseHintVote,
  parseJudgeVote,
  selectHint,
} from '../../core/judge-votes.js';

const votes = (...scores: (1 | 0 | -1 | null)[]): JudgeVote[] => scores.map((score) => ({ score, raw: 'x' }));

describe('parseJudgeVote', () => {
  it('takes the last \\boxed{d} of the reply', () => {
    expect(parseJudgeVote('at first \\boxed{-1}, but on reflection \\boxed{1}').score).toBe(1);
    expect(parseJudgeVote('The user says thanks.\n\\boxed{0}').score).toBe(0);
    expect(parseJudgeVote('redo request: \\boxed{-1}').score).toBe(-1);
    expect(parseJudgeVote('\\boxed{+1}').score).toBe(1);
  });

  it('reads -0 as 0, not as negative zero', () => {
    expect(Object.is(parseJudgeVote('\\boxed{-0}').score, 0)).toBe(true);
  });

  it('gives no vote for a last digit outside {1, -1, 0}, even after a valid one', () => {
    expect(parseJudgeVote('\\boxed{1} then \\boxed{2}').score).toBeNull();
    expect(parseJudgeVote('\\boxed{-7}').score).toBeNull();
  });

  it('ignores boxes that do not hold exactly one signed digit', () => {
    // `\boxed{10}` and `\boxed{ 1}` do not match the pattern, so the earlier `\boxed{-1}` is the last match.
    expect(parseJudgeVote('\\boxed{-1} \\boxed{10} \\boxed{ 1} \\boxed{1.0}').score).toBe(-1);
    expect(parseJudgeVote('no verdict here').score).toBeNull();
    expect(parseJudgeVote('boxed{1}').score).toBeNull();
  });

  it('keeps the raw text, and a failed call (null) is no vote', () => {
    expect(parseJudgeVote('\\boxed{1}')).toEqual({ score: 1, raw: '\\boxed{1}' });
    expect(parseJudgeVote(null)).toEqual({ score: null, raw: null });
  });
});

describe('majorityVote', () => {
  it('follows the spec examples', () => {
    expect(majorityVote(votes(1, 1, -1)).score).toBe(1);
    expect(majorityVote(votes(1, -1, 0))).toMatchObject({ score: 0, outcome: 'tie' });
    expect(majorityVote(votes(1, null, null))).toMatchObject({ score: 1, outcome: 'majority' });
    expect(majorityVote(votes(-1)).score).toBe(-1);
  });

  it('gives 0 without valid votes, and for any tie at the top', () => {
    expect(majorityVote([])).toMatchObject({ score: 0, outcome: 'no-valid-votes' });
    expect(majorityVote(votes(null, null))).toMatchObject({ score: 0, outcome: 'no-valid-votes' });
    expect(majorityVote(votes(1, -1))).toMatchObject({ score: 0, outcome: 'tie' });
    expect(majorityVote(votes(1, 1, -1, -1, 0))).toMatchObject({ score: 0, outcome: 'tie' });
  });

  it('a clear majority of zeros is 0 by majority, not by tie', () => {
    expect(majorityVote(votes(0, 0, 1))).toMatchObject({ score: 0, outcome: 'majority' });
    expect(majorityVote(votes(-1, -1, 1, 0))).toMatchObject({
      score: -1,
      counts: { '1': 1, '0': 1, '-1': 2 },
    });
  });
});

describe('parseHintVote', () => {
  it('reads the decision and the last hint block, stripped', () => {
    const raw =
      'thinking...\n\\boxed{1}\n[HINT_START]  first  [HINT_END] [HINT_START]\n Use metric units. \n[HINT_END]';
    expect(parseHintVote(raw)).toEqual({ score: 1, hint: 'Use metric units.', raw });
  });

  it('accepts only 1 and -1 as decisions', () => {
    expect(parseHintVote('\\boxed{0} [HINT_START]a long enough hint[HINT_END]').score).toBeNull();
    expect(parseHintVote('\\boxed{-1}')).toEqual({ score: -1, hint: '', raw: '\\boxed{-1}' });
  });

  it('spans lines inside a hint block and does not match an unclosed one', () => {
    expect(parseHintVote('\\boxed{1}[HINT_START]line one\nline two[HINT_END]').hint).toBe(
      'line one\nline two',
    );
    expect(parseHintVote('\\boxed{1}[HINT_START]never closed').hint).toBe('');
  });

  it('strips the way Python does: U+FEFF stays, U+0085 goes', () => {
    expect(parseHintVote('[HINT_START]\u0085hint\u00a0[HINT_END]').hint).toBe('hint');
    expect(parseHintVote('[HINT_START]\ufeffhint[HINT_END]').hint).toBe('\ufeffhint');
  });

  it('a failed call has no decision and no hint', () => {
    expect(parseHintVote(null)).toEqual({ score: null, hint: '', raw: null });
  });
});

describe('selectHint', () => {
  const vote = (score: 1 | -1 | null, hint: string): HintVote => ({ score, hint, raw: `raw:${hint}` });

  it('picks the longest hint among positive votes with more than 10 characters', () => {
    const selection = selectHint([
      vote(1, 'Short one!!'), // 11 characters: long enough
      vote(-1, 'A much longer hint from a negative vote'),
      vote(1, 'The longest positive hint'),
      vote(1, 'tiny'),
    ]);
    expect(selection).toMatchObject({ accepted: true, hint: 'The longest positive hint', voteIndex: 2 });
    expect(selection.votes).toHaveLength(4);
  });

  it('needs strictly more than 10 characters, counted as code points', () => {
    expect(selectHint([vote(1, '0123456789')])).toMatchObject({ accepted: false, reason: 'hint-too-short' });
    expect(selectHint([vote(1, '01234567890')])).toMatchObject({ accepted: true });
    // Ten emoji are 20 UTF-16 units but ten characters to Python: not enough.
    expect(selectHint([vote(1, '😀'.repeat(10))])).toMatchObject({ accepted: false });
  });

  it('keeps the earliest of equally long hints', () => {
    expect(selectHint([vote(1, 'aaaaaaaaaaaa'), vote(1, 'bbbbbbbbbbbb')])).toMatchObject({ voteIndex: 0 });
  });

  it('says why nothing was selected', () => {
    expect(selectHint([])).toMatchObject({ accepted: false, reason: 'no-votes' });
    expect(selectHint([vote(-1, ''), vote(null, 'a hint without a decision')])).toMatchObject({
      accepted: false,
      reason: 'no-positive-vote',
    });
  });
});
