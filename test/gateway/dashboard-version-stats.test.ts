// The statistics the dashboard plots per version, from stored samples as scoring writes them.

import { describe, expect, it } from 'vitest';
import { versionSampleStats } from '../../gateway/dashboard/version-stats.js';

describe("a version's sample statistics", () => {
  it('counts rewards, votes, feedback and hints, and measures staleness and the teacher gap', () => {
    const stats = versionSampleStats(
      5,
      4,
      [
        {
          reward: 1,
          kind: 'rl',
          policyVersion: 4,
          judge: { evalVotes: [1, 1, null], hintVotes: null, hint: null, feedback: null },
        },
        {
          reward: 0,
          kind: 'opd',
          policyVersion: 2,
          rolloutLogProbs: [-2, -1],
          teacherLogProbs: [-1, -0.5],
          judge: { evalVotes: null, hintVotes: [1, 1], hint: 'be brief', feedback: null },
        },
        {
          reward: -1,
          kind: 'opd+rl',
          policyVersion: 4,
          rolloutLogProbs: [-1],
          teacherLogProbs: [-1.5],
          judge: {
            evalVotes: [-1, 0],
            hintVotes: [-1],
            hint: null,
            feedback: { rating: -1, correction: 'Say Paris.' },
          },
        },
        // Combine's rl rows carry no teacher that counts, even with log-probs stored.
        { reward: 1, kind: 'rl', policyVersion: 3, rolloutLogProbs: [-1], teacherLogProbs: [-1] },
      ],
      ['2026-01-01T00:00:02.000Z', '2026-01-01T00:00:09.000Z', '2026-01-01T00:00:05.000Z'],
    );
    expect(stats).toMatchObject({
      samples: 4,
      found: 4,
      rewardMean: 0.25,
      rewards: { positive: 2, zero: 1, negative: 1 },
      votes: { positive: 2, zero: 1, negative: 1 },
      ratings: 1,
      corrections: 1,
      stalenessMax: 2,
      hintsAsked: 2,
      hintsAccepted: 1,
      teacherSamples: 2,
      kinds: { rl: 2, opd: 1, 'opd+rl': 1 },
      latestTurnAt: '2026-01-01T00:00:09.000Z',
    });
    // Lags 0, 2, 0, 1 (version 5 trained from 4).
    expect(stats.stalenessMean).toBe(0.75);
    // opd: (1 + 0.5) / 2 = 0.75; opd+rl: -0.5; mean 0.125.
    expect(stats.teacherGap).toBeCloseTo(0.125);
  });

  it('has no means without samples', () => {
    const stats = versionSampleStats(1, 2, []);
    expect(stats).toMatchObject({
      samples: 2,
      found: 0,
      rewardMean: null,
      stalenessMean: null,
      teacherGap: null,
    });
  });
});
