import { describe, expect, it } from 'vitest';
import {
  grpoAdvantages,
  isConstantRewardGroup,
  normaliseGroupRewards,
  normaliseStepWise,
  populationStd,
  sampleStd,
  stepWiseTokenAdvantages,
} from '../../core/advantages.js';

describe('standard deviations', () => {
  it('sample std divides by n - 1, population std by n', () => {
    // [1, 0, 0, 0]: mean 0.25, squared deviations 0.5625 + 3 × 0.0625 = 0.75.
    expect(sampleStd([1, 0, 0, 0])).toBeCloseTo(Math.sqrt(0.25), 12); // 0.75 / 3
    expect(populationStd([1, 0, 0, 0])).toBeCloseTo(Math.sqrt(0.1875), 12); // 0.75 / 4
  });
});

describe('normaliseGroupRewards (GRPO, sample std)', () => {
  it('matches hand-computed values', () => {
    // [1, 0, 0, 0]: mean 0.25, sample std 0.5 → 0.75 / 0.500001 and -0.25 / 0.500001.
    const [a, b, c, d] = normaliseGroupRewards([1, 0, 0, 0]);
    expect(a).toBeCloseTo(1.499997, 6);
    expect(b).toBeCloseTo(-0.499999, 6);
    expect(c).toBe(b);
    expect(d).toBe(b);
    // [1, -1]: mean 0, sample std √2 → ±1 / (√2 + 1e-6).
    const [plus, minus] = normaliseGroupRewards([1, -1]);
    expect(plus).toBeCloseTo(1 / (Math.SQRT2 + 1e-6), 12);
    expect(minus).toBeCloseTo(-1 / (Math.SQRT2 + 1e-6), 12);
  });

  it('gives 0 to a group of one and to a constant group', () => {
    expect(normaliseGroupRewards([0.7])).toEqual([0]);
    expect(normaliseGroupRewards([0.5, 0.5, 0.5])).toEqual([0, 0, 0]);
    expect(normaliseGroupRewards([])).toEqual([]);
  });
});

describe('constant-reward groups', () => {
  it('detects groups whose rewards are all equal, a group of one included', () => {
    expect(isConstantRewardGroup([1, 1, 1])).toBe(true);
    expect(isConstantRewardGroup([0.3])).toBe(true);
    expect(isConstantRewardGroup([1, 1 + 1e-13])).toBe(true);
    expect(isConstantRewardGroup([1, 0.999])).toBe(false);
  });

  it('drops constant groups before normalising', () => {
    const result = grpoAdvantages([
      { groupId: 'a', rewards: [1, 1] },
      { groupId: 'b', rewards: [1, -1] },
      { groupId: 'c', rewards: [0] },
    ]);
    expect(result.droppedGroupIds).toEqual(['a', 'c']);
    expect(result.groups.map((g) => g.groupId)).toEqual(['b']);
    expect(result.groups[0]?.advantages[0]).toBeCloseTo(1 / (Math.SQRT2 + 1e-6), 12);
  });

  it('keeps the first group when every group is constant, so a batch is never empty', () => {
    const result = grpoAdvantages([
      { groupId: 'a', rewards: [1, 1] },
      { groupId: 'b', rewards: [0, 0] },
    ]);
    expect(result).toEqual({ groups: [{ groupId: 'a', advantages: [0, 0] }], droppedGroupIds: ['b'] });
    expect(grpoAdvantages([])).toEqual({ groups: [], droppedGroupIds: [] });
  });
});

describe('normaliseStepWise (per (group, step) bucket, population std)', () => {
  const span = (start: number, end: number) => [start, end] as const;

  it('normalises buckets of several, keeps buckets of one raw, drops constant buckets', () => {
    const result = normaliseStepWise([
      {
        groupId: 'g',
        steps: [
          { stepIndex: 0, value: 1, tokenSpan: span(0, 2) },
          { stepIndex: 1, value: 5, tokenSpan: span(2, 4) },
        ],
      },
      {
        groupId: 'g',
        steps: [
          { stepIndex: 0, value: 3, tokenSpan: span(0, 3) },
          { stepIndex: 1, value: 5, tokenSpan: span(3, 5) },
          { stepIndex: 2, value: 0.25, tokenSpan: span(5, 6) },
        ],
      },
    ]);
    // Bucket (g, 0): values 1 and 3, mean 2, population std 1 → ±1 / (1 + 1e-6).
    // Bucket (g, 1): values 5 and 5 → constant, dropped. Bucket (g, 2): one value → raw 0.25.
    const [first, second] = result.samples;
    expect(first?.steps).toHaveLength(1);
    expect(first?.steps[0]?.value).toBeCloseTo(-1 / (1 + 1e-6), 12);
    expect(first?.removed).toBe(false);
    expect(second?.steps.map((s) => s.stepIndex)).toEqual([0, 2]);
    expect(second?.steps[0]?.value).toBeCloseTo(1 / (1 + 1e-6), 12);
    expect(second?.steps[1]).toEqual({ stepIndex: 2, value: 0.25, tokenSpan: [5, 6] });
    expect(result.droppedBuckets).toEqual([{ groupId: 'g', stepIndex: 1 }]);
  });

  it('keeps buckets of different groups apart and removes samples that lose every step', () => {
    const result = normaliseStepWise([
      { groupId: 'a', steps: [{ stepIndex: 0, value: 1, tokenSpan: span(0, 1) }] },
      { groupId: 'a', steps: [{ stepIndex: 0, value: 1, tokenSpan: span(0, 1) }] },
      { groupId: 'b', steps: [{ stepIndex: 0, value: 2, tokenSpan: span(0, 1) }] },
      { groupId: 'b', steps: [{ stepIndex: 0, value: 4, tokenSpan: span(0, 1) }] },
    ]);
    expect(result.samples.map((s) => s.removed)).toEqual([true, true, false, false]);
    expect(result.samples[2]?.steps[0]?.value).toBeCloseTo(-1 / (1 + 1e-6), 12);
  });

  it('keeps the first bucket when every bucket is constant', () => {
    const result = normaliseStepWise([
      { groupId: 'a', steps: [{ stepIndex: 0, value: 1, tokenSpan: span(0, 1) }] },
      { groupId: 'a', steps: [{ stepIndex: 0, value: 1, tokenSpan: span(0, 1) }] },
    ]);
    // Kept as a bucket of two equal values: (1 - 1) / (0 + 1e-6) = 0.
    expect(result.samples.map((s) => s.steps[0]?.value)).toEqual([0, 0]);
    expect(result.droppedBuckets).toEqual([]);
  });
});

describe('stepWiseTokenAdvantages', () => {
  it('spreads each step value over its span, 0 elsewhere, clipped to the response', () => {
    expect(
      stepWiseTokenAdvantages(
        [
          { stepIndex: 0, value: 0.5, tokenSpan: [0, 2] },
          { stepIndex: 1, value: -1, tokenSpan: [3, 9] },
        ],
        5,
      ),
    ).toEqual([0.5, 0.5, 0, -1, -1]);
  });
});
