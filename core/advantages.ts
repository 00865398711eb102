// Track 2 reward shaping, as the Gen-Verse slime fork does it before training (spec 10.0):
// - GRPO: within a group of rollouts of the same task, r̂ = (r − mean) / (std + 1e-6) with the SAMPLE
//   standard deviation (torch's default `std()`, n − 1 in the denominator); a group of one gets 0.
//   Groups whose rewards are all equal are dropped first, keeping the first group if every one is constant.
// - step_wise: per (group, step index) bucket across trajectories, v̂ = (v − μ) / (σ + 1e-6) with the
//   POPULATION standard deviation (the fork computes Σv²/n − μ²); a bucket of one keeps its raw value;
//   buckets of several equal values are dropped (keeping the first bucket if all are), and a sample that
//   loses every step is removed.
// Track 1 does neither: every turn is its own group and the reward is used as it is (spec 5).

export const ADVANTAGE_EPSILON = 1e-6;
/** Two rewards closer than this are equal (the fork's `max − min <= 1e-12` and `var <= 1e-12`). */
export const CONSTANT_TOLERANCE = 1e-12;

function mean(values: readonly number[]): number {
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** Sample standard deviation (n − 1); needs at least two values. */
export function sampleStd(values: readonly number[]): number {
  const m = mean(values);
  let squares = 0;
  for (const v of values) squares += (v - m) ** 2;
  return Math.sqrt(squares / (values.length - 1));
}

/** Population standard deviation (n). */
export function populationStd(values: readonly number[]): number {
  const m = mean(values);
  let squares = 0;
  for (const v of values) squares += (v - m) ** 2;
  return Math.sqrt(squares / values.length);
}

/** GRPO advantages of one group: (r − mean) / (sample std + 1e-6); a single rollout gets 0. */
export function normaliseGroupRewards(rewards: readonly number[]): number[] {
  if (rewards.length === 0) return [];
  if (rewards.length === 1) return [0];
  const m = mean(rewards);
  const std = sampleStd(rewards);
  return rewards.map((r) => (r - m) / (std + ADVANTAGE_EPSILON));
}

/** True when every reward in the group is the same, so GRPO would give them all 0 (a group of one counts). */
export function isConstantRewardGroup(rewards: readonly number[]): boolean {
  if (rewards.length === 0) return true;
  return Math.max(...rewards) - Math.min(...rewards) <= CONSTANT_TOLERANCE;
}

export interface RewardGroup {
  /** The task the rollouts share (one GRPO group). */
  groupId: string;
  /** One outcome reward per rollout of the task, in rollout order. */
  rewards: readonly number[];
}

export interface GroupAdvantages {
  groupId: string;
  /** One advantage per rollout, in the order of `rewards`. */
  advantages: number[];
}

export interface GrpoResult {
  groups: GroupAdvantages[];
  /** Groups left out because all their rewards were equal. */
  droppedGroupIds: string[];
}

/** Drops constant-reward groups (keeping the first group when every group is constant), then normalises. */
export function grpoAdvantages(groups: readonly RewardGroup[]): GrpoResult {
  const varied = groups.filter((g) => !isConstantRewardGroup(g.rewards));
  const first = groups[0];
  const kept = varied.length === 0 && first !== undefined ? [first] : varied;
  const keptIds = new Set(kept.map((g) => g.groupId));
  return {
    groups: kept.map((g) => ({ groupId: g.groupId, advantages: normaliseGroupRewards(g.rewards) })),
    droppedGroupIds: groups.filter((g) => !keptIds.has(g.groupId)).map((g) => g.groupId),
  };
}

export interface StepScore {
  /** Which step of the trajectory (the bucket key together with the group). */
  stepIndex: number;
  value: number;
  /** Response-token span [start, end) the step's advantage applies to. */
  tokenSpan: readonly [number, number];
}

export interface StepWiseSample {
  groupId: string;
  steps: readonly StepScore[];
}

export interface NormalisedStepWiseSample {
  groupId: string;
  /** The steps whose bucket was kept, with normalised values. */
  steps: StepScore[];
  /** True when every step was dropped: the sample trains nothing. */
  removed: boolean;
}

export interface StepWiseResult {
  samples: NormalisedStepWiseSample[];
  droppedBuckets: { groupId: string; stepIndex: number }[];
}

/** Step-wise normalisation per (group, step index) bucket across the trajectories of a group. */
export function normaliseStepWise(samples: readonly StepWiseSample[]): StepWiseResult {
  const buckets = new Map<string, { groupId: string; stepIndex: number; values: number[] }>();
  const keyOf = (groupId: string, stepIndex: number) => JSON.stringify([groupId, stepIndex]);
  for (const sample of samples) {
    for (const step of sample.steps) {
      const key = keyOf(sample.groupId, step.stepIndex);
      const bucket = buckets.get(key) ?? { groupId: sample.groupId, stepIndex: step.stepIndex, values: [] };
      bucket.values.push(step.value);
      buckets.set(key, bucket);
    }
  }

  const stats = new Map<string, { mean: number; std: number; count: number }>();
  const constant = new Set<string>();
  for (const [key, bucket] of buckets) {
    const std = populationStd(bucket.values);
    stats.set(key, { mean: mean(bucket.values), std, count: bucket.values.length });
    if (bucket.values.length > 1 && std * std <= CONSTANT_TOLERANCE) constant.add(key);
  }
  const firstKey = buckets.keys().next().value;
  if (constant.size === buckets.size && firstKey !== undefined) constant.delete(firstKey);

  const normalised = samples.map((sample): NormalisedStepWiseSample => {
    const steps: StepScore[] = [];
    for (const step of sample.steps) {
      const key = keyOf(sample.groupId, step.stepIndex);
      const stat = stats.get(key);
      if (stat === undefined || constant.has(key)) continue;
      const value = stat.count > 1 ? (step.value - stat.mean) / (stat.std + ADVANTAGE_EPSILON) : step.value;
      steps.push({ stepIndex: step.stepIndex, value, tokenSpan: step.tokenSpan });
    }
    return { groupId: sample.groupId, steps, removed: steps.length === 0 };
  });

  return {
    samples: normalised,
    droppedBuckets: [...constant].map((key) => {
      const bucket = buckets.get(key) as { groupId: string; stepIndex: number };
      return { groupId: bucket.groupId, stepIndex: bucket.stepIndex };
    }),
  };
}

/** Per-token advantages of a step-wise sample: each step's value over its span, 0 elsewhere; later steps win. */
export function stepWiseTokenAdvantages(steps: readonly StepScore[], responseLength: number): number[] {
  const advantages = new Array<number>(responseLength).fill(0);
  for (const step of steps) {
    const start = Math.max(0, step.tokenSpan[0]);
    const end = Math.min(responseLength, step.tokenSpan[1]);
    for (let t = start; t < end; t++) advantages[t] = step.value;
  }
  return advantages;
}
