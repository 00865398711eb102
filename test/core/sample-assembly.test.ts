import { describe, expect, it } from 'vitest';
import { assembleSample, type CapturedTurn, type TurnScoring } from '../../core/sample-assembly.js';

const turn: CapturedTurn = {
  sampleId: 'sess-1:3-0123456789abcdef',
  sessionId: 'sess-1',
  turn: 3,
  promptIds: [101, 102],
  responseIds: [7, 8, 9],
  responseLogProbs: [-0.1, -0.2, -0.3],
  policyVersion: 4,
};
const teacher = [-0.05, -0.5, -0.25];
const accepted = { accepted: true as const };
const rejected = { accepted: false as const, reason: 'no-positive-vote' };

function score(
  evalScore: TurnScoring['evalScore'],
  hint: TurnScoring['hint'],
  teacherLogProbs = teacher,
): TurnScoring {
  return { evalScore, hint, teacherLogProbs };
}

describe('assembleSample: common fields', () => {
  it('builds tokens, mask, log-probs and the deterministic id', () => {
    const result = assembleSample('rl', turn, score(1, null));
    expect(result).toEqual({
      ok: true,
      sample: {
        sampleId: 'sess-1:3-0123456789abcdef',
        sessionId: 'sess-1',
        turn: 3,
        tokens: [101, 102, 7, 8, 9],
        responseLength: 3,
        lossMask: [1, 1, 1],
        rolloutLogProbs: [-0.1, -0.2, -0.3],
        reward: 1,
        policyVersion: 4,
        method: 'rl',
        kind: 'rl',
      },
    });
  });

  it('does not share arrays with its input', () => {
    const result = assembleSample('combine', turn, score(-1, accepted));
    if (!result.ok) throw new Error('expected a sample');
    expect(result.sample.rolloutLogProbs).not.toBe(turn.responseLogProbs);
    expect(result.sample.teacherLogProbs).not.toBe(teacher);
  });

  it('records the temperature of the log-probs when it is not 1, and refuses a bad one', () => {
    const warm = assembleSample('rl', { ...turn, temperature: 0.6 }, score(1, null));
    expect(warm).toMatchObject({ ok: true, sample: { temperature: 0.6 } });
    const plain = assembleSample('rl', { ...turn, temperature: 1 }, score(1, null));
    expect(plain.ok && plain.sample.temperature).toBeUndefined();
    expect(assembleSample('rl', { ...turn, temperature: 0 }, score(1, null))).toMatchObject({
      ok: false,
      exclusion: { reason: 'invalid-input' },
    });
  });

  it('excludes empty responses and inconsistent input', () => {
    expect(assembleSample('rl', { ...turn, responseIds: [], responseLogProbs: [] }, score(1, null))).toEqual({
      ok: false,
      exclusion: {
        sampleId: 'sess-1:3-0123456789abcdef',
        reason: 'empty-response',
        detail: 'the response has no tokens',
      },
    });
    expect(assembleSample('rl', { ...turn, responseLogProbs: [-0.1] }, score(1, null))).toMatchObject({
      ok: false,
      exclusion: { reason: 'invalid-input', detail: '1 rollout log-probs for 3 response tokens' },
    });
    expect(assembleSample('rl', { ...turn, responseIds: [7, -8, 9] }, score(1, null))).toMatchObject({
      exclusion: { reason: 'invalid-input' },
    });
    expect(
      assembleSample('rl', { ...turn, responseLogProbs: [-0.1, Number.NaN, 0] }, score(1, null)),
    ).toMatchObject({ exclusion: { reason: 'invalid-input' } });
    expect(assembleSample('rl', { ...turn, policyVersion: -1 }, score(1, null))).toMatchObject({
      exclusion: { reason: 'invalid-input' },
    });
  });
});

describe('assembleSample: rl', () => {
  it('rewards +1 and -1 votes', () => {
    expect(assembleSample('rl', turn, score(-1, null))).toMatchObject({
      ok: true,
      sample: { reward: -1, kind: 'rl' },
    });
  });

  it('excludes neutral (0) and unjudged turns, and ignores hints', () => {
    expect(assembleSample('rl', turn, score(0, accepted))).toMatchObject({
      ok: false,
      exclusion: { reason: 'neutral-score' },
    });
    expect(assembleSample('rl', turn, score(null, accepted))).toMatchObject({
      exclusion: { reason: 'not-judged' },
    });
  });

  it('carries no teacher log-probs', () => {
    const result = assembleSample('rl', turn, score(1, accepted));
    expect(result.ok && result.sample.teacherLogProbs).toBe(undefined);
  });
});

describe('assembleSample: opd', () => {
  it('an accepted hint gives an opd sample with the teacher log-probs and reward 0', () => {
    expect(assembleSample('opd', turn, score(1, accepted))).toMatchObject({
      ok: true,
      sample: { kind: 'opd', method: 'opd', reward: 0, teacherLogProbs: teacher },
    });
  });

  it('no accepted hint → excluded, whatever the vote', () => {
    expect(assembleSample('opd', turn, score(1, rejected))).toEqual({
      ok: false,
      exclusion: {
        sampleId: 'sess-1:3-0123456789abcdef',
        reason: 'no-hint',
        detail: 'no hint accepted (no-positive-vote)',
      },
    });
    expect(assembleSample('opd', turn, score(1, null))).toMatchObject({ exclusion: { reason: 'no-hint' } });
  });

  it('an accepted hint without matching teacher log-probs is invalid input', () => {
    expect(assembleSample('opd', turn, { evalScore: null, hint: accepted })).toMatchObject({
      exclusion: {
        reason: 'invalid-input',
        detail: 'a hint was accepted but there are no teacher log-probs',
      },
    });
    expect(assembleSample('opd', turn, score(null, accepted, [-1, -2]))).toMatchObject({
      exclusion: { reason: 'invalid-input', detail: '2 teacher log-probs for 3 response tokens' },
    });
  });

  it('keeps top-K teacher rows when they match the response', () => {
    const teacherTopK = {
      logProbs: [
        [-0.1, -3],
        [-0.2, -2],
        [-0.3, -1.5],
      ],
      tokenIds: [
        [7, 1],
        [8, 1],
        [9, 2],
      ],
    };
    const result = assembleSample('opd', turn, { ...score(null, accepted), teacherTopK });
    expect(result).toMatchObject({
      ok: true,
      sample: { teacherTopkLogProbs: teacherTopK.logProbs, teacherTopkIndices: teacherTopK.tokenIds },
    });
    const short = { logProbs: teacherTopK.logProbs.slice(1), tokenIds: teacherTopK.tokenIds.slice(1) };
    expect(assembleSample('opd', turn, { ...score(null, accepted), teacherTopK: short })).toMatchObject({
      exclusion: { reason: 'invalid-input' },
    });
  });
});

describe('assembleSample: combine (spec section 7 table)', () => {
  it('hint and vote: opd+rl with the real teacher and reward = vote', () => {
    expect(assembleSample('combine', turn, score(-1, accepted))).toMatchObject({
      ok: true,
      sample: { kind: 'opd+rl', method: 'combine', reward: -1, teacherLogProbs: teacher },
    });
  });

  it('hint, neutral vote: opd with the real teacher and reward 0', () => {
    expect(assembleSample('combine', turn, score(0, accepted))).toMatchObject({
      ok: true,
      sample: { kind: 'opd', reward: 0, teacherLogProbs: teacher },
    });
  });

  it('vote, no hint: rl with no teacher (every trainer gives it a teacher term of exactly 0)', () => {
    const result = assembleSample('combine', turn, score(1, rejected));
    expect(result).toMatchObject({ ok: true, sample: { kind: 'rl', reward: 1 } });
    expect(result.ok && result.sample.teacherLogProbs).toBeUndefined();
  });

  it('neither: excluded with both reasons', () => {
    expect(assembleSample('combine', turn, score(0, rejected))).toEqual({
      ok: false,
      exclusion: {
        sampleId: 'sess-1:3-0123456789abcdef',
        reason: 'no-signal',
        detail: 'no hint accepted (no-positive-vote), and the judge vote is 0',
      },
    });
    expect(assembleSample('combine', turn, score(null, null))).toMatchObject({
      exclusion: {
        reason: 'no-signal',
        detail: 'the hint judge was not asked, and the judge vote is missing',
      },
    });
  });
});
