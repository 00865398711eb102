// What the samples of one policy version say, taken together: reward and vote mix, explicit feedback, staleness,
// the teacher–student log-prob gap and hint acceptance. Pure: the dashboard reads the samples and caches the
// result per version (a published version's samples never change).

/** A stored training sample as the dashboard reads it: the fields it plots, all optional (older records). */
export interface StoredSampleView {
  reward?: number;
  kind?: string;
  policyVersion?: number;
  rolloutLogProbs?: number[];
  teacherLogProbs?: number[];
  judge?: {
    evalVotes?: (number | null)[] | null;
    hintVotes?: (number | null)[] | null;
    hint?: string | null;
    feedback?: { rating: number | null; correction: string | null } | null;
  } | null;
}

export interface SignCounts {
  positive: number;
  zero: number;
  negative: number;
}

export interface VersionSampleStats {
  /** Sample ids in the version's lineage entry. */
  samples: number;
  /** Of those, how many were still in the store. */
  found: number;
  rewardMean: number | null;
  /** Samples by the sign of their reward. */
  rewards: SignCounts;
  /** The judge's votes over the version's samples (unparsed votes are left out). */
  votes: SignCounts;
  /** Samples whose scoring used a rating, or a correction, from explicit feedback. */
  ratings: number;
  corrections: number;
  /** Policy lag: versions between the one that served a sample and the one it trained from. */
  stalenessMean: number | null;
  stalenessMax: number | null;
  /** Mean per-token teacher log-prob minus rollout log-prob, over opd and opd+rl samples. */
  teacherGap: number | null;
  teacherSamples: number;
  /** Samples whose scoring asked the hint judge, and those it gave a hint for. */
  hintsAsked: number;
  hintsAccepted: number;
  kinds: Record<string, number>;
  /** When the newest of the version's turns was recorded (a version's time where its entry has none). */
  latestTurnAt: string | null;
}

const signOf = (counts: SignCounts, value: number): void => {
  if (value > 0) counts.positive += 1;
  else if (value < 0) counts.negative += 1;
  else counts.zero += 1;
};

const mean = (values: readonly number[]): number | null =>
  values.length === 0 ? null : values.reduce((sum, v) => sum + v, 0) / values.length;

/** Version `version` trained from `version - 1`: a sample served by an older one lagged by the difference. */
export function versionSampleStats(
  version: number,
  sampleIds: number,
  samples: readonly StoredSampleView[],
  turnTimes: readonly string[] = [],
): VersionSampleStats {
  const rewards: SignCounts = { positive: 0, zero: 0, negative: 0 };
  const votes: SignCounts = { positive: 0, zero: 0, negative: 0 };
  const rewardValues: number[] = [];
  const lags: number[] = [];
  const gaps: number[] = [];
  const kinds: Record<string, number> = {};
  let ratings = 0;
  let corrections = 0;
  let hintsAsked = 0;
  let hintsAccepted = 0;
  for (const sample of samples) {
    if (typeof sample.reward === 'number') {
      rewardValues.push(sample.reward);
      signOf(rewards, sample.reward);
    }
    if (sample.kind) kinds[sample.kind] = (kinds[sample.kind] ?? 0) + 1;
    if (typeof sample.policyVersion === 'number') lags.push(Math.max(0, version - 1 - sample.policyVersion));
    const judge = sample.judge ?? null;
    for (const vote of judge?.evalVotes ?? []) if (typeof vote === 'number') signOf(votes, vote);
    if (judge?.feedback?.rating !== null && judge?.feedback?.rating !== undefined) ratings += 1;
    if (judge?.feedback?.correction) corrections += 1;
    if (Array.isArray(judge?.hintVotes)) hintsAsked += 1;
    if (typeof judge?.hint === 'string' && judge.hint.length > 0) hintsAccepted += 1;
    const gap = teacherGapOf(sample);
    if (gap !== null) gaps.push(gap);
  }
  return {
    samples: sampleIds,
    found: samples.length,
    rewardMean: mean(rewardValues),
    rewards,
    votes,
    ratings,
    corrections,
    stalenessMean: mean(lags),
    stalenessMax: lags.length === 0 ? null : Math.max(...lags),
    teacherGap: mean(gaps),
    teacherSamples: gaps.length,
    hintsAsked,
    hintsAccepted,
    kinds,
    // ISO times: the greatest string is the latest.
    latestTurnAt: [...turnTimes].sort().at(-1) ?? null,
  };
}

/** Only samples that distil from a teacher (combine's rl rows carry none that counts). */
function teacherGapOf(sample: StoredSampleView): number | null {
  if (sample.kind !== 'opd' && sample.kind !== 'opd+rl') return null;
  const teacher = sample.teacherLogProbs;
  const rollout = sample.rolloutLogProbs;
  if (!teacher || !rollout || teacher.length === 0 || teacher.length !== rollout.length) return null;
  let sum = 0;
  for (let i = 0; i < teacher.length; i++) sum += (teacher[i] as number) - (rollout[i] as number);
  return sum / teacher.length;
}
