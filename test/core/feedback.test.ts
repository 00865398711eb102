import { describe, expect, it } from 'vitest';
import {
  effectiveFeedback,
  type FeedbackRecord,
  feedbackNeedsJudge,
  feedbackRequestSchema,
  feedbackScore,
} from '../../core/feedback.js';

const record = (
  id: string,
  at: string,
  rating: number | null,
  correction: string | null,
): FeedbackRecord => ({
  id,
  sampleId: 'local/s:1-0123456789abcdef',
  sessionId: 'local/s',
  rating,
  correction,
  receivedAt: at,
  keyName: '',
});

describe('explicit feedback rules', () => {
  it('takes the latest rating and the latest correction, whatever order the records are listed in', () => {
    // A user says 👍, then corrects, then changes to 👎: the turn counts 👎 with the correction.
    const taken = effectiveFeedback([
      record('fb-c', '2026-12-04T10:00:03Z', -1, null),
      record('fb-a', '2026-12-04T10:00:01Z', 1, null),
      record('fb-b', '2026-12-04T10:00:02Z', null, 'say Paris'),
    ]);
    expect(taken).toEqual({ rating: -1, correction: 'say Paris', feedbackIds: ['fb-a', 'fb-b', 'fb-c'] });
  });

  it('scores a rating as the reward under override, as one vote beside the judge under join', () => {
    expect(feedbackScore({ rating: 0.5, correction: null }, [1, 1, 1], 'override')).toBe(0.5);
    // A correction alone says the reply was wrong.
    expect(feedbackScore({ rating: null, correction: 'no' }, null, 'override')).toBe(-1);
    expect(feedbackScore({ rating: null, correction: null }, [1], 'override')).toBeNull();
    expect(feedbackScore({ rating: -1, correction: null }, [1, 1, null], 'join')).toBe(1);
    expect(feedbackScore({ rating: -1, correction: null }, [1], 'join')).toBe(0);
    expect(feedbackScore({ rating: -0.2, correction: null }, [-1, 1], 'join')).toBe(-1);
  });

  it('asks the judge only for what feedback does not say', () => {
    const rated = { rating: 1, hasCorrection: false };
    expect(feedbackNeedsJudge('rl', rated, 'override')).toEqual({ eval: false, hint: false });
    expect(feedbackNeedsJudge('rl', rated, 'join')).toEqual({ eval: true, hint: false });
    expect(feedbackNeedsJudge('combine', rated, 'override')).toEqual({ eval: false, hint: true });
    expect(feedbackNeedsJudge('opd', { rating: null, hasCorrection: true }, 'override')).toEqual({
      eval: false,
      hint: false,
    });
  });

  it('refuses a body that names no turn, two turns, no feedback, or values out of range', () => {
    const refused = [
      {},
      { rating: 1 },
      { turn_id: 't', session_id: 's', rating: 1 },
      { turn_id: 't' },
      { turn_id: 't', rating: 1.01 },
      { turn_id: 't', position: 1, rating: 1 },
      { session_id: 's', scope: 'session', correction: 'x' },
      { session_id: 's', position: 0, rating: 1 },
      { turn_id: 't', rating: 1, extra: true },
      { turn_id: 't', correction: '   ' },
    ];
    for (const body of refused)
      expect(feedbackRequestSchema.safeParse(body).success, JSON.stringify(body)).toBe(false);
    expect(feedbackRequestSchema.parse({ session_id: 7, rating: -1 })).toMatchObject({ scope: 'turn' });
  });
});
