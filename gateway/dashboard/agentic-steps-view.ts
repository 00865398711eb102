// A Track 2 run's training steps as the dashboard shows them: per step, the rollouts' status counts and, per
// task, the distribution of the episode rewards (count, mean, min, quartiles, max). Read from the store, never
// through a workflow: each step's batch records (`agentic/<runId>/batches/<step>/<i>`, one per batch, with
// every rollout's status and evaluated reward), else its manifest's groups (runs whose batches returned their
// results inline). A step with a manifest is finished: its view is cached by the manifest's step id.

import type { StepGroup } from '../../core/step-groups.js';
import type { SampleStore } from '../../store/sample-store.js';
import {
  type BatchResultsRecord,
  batchResultsKey,
  type RolloutStatus,
} from '../../workflows/agentic-signals.js';

/** Newest steps a view carries. */
export const MAX_AGENTIC_STEPS = 500;
const CACHE_SIZE = 5_000;

export interface RewardDistribution {
  /** Rollouts with an evaluated reward (FAILED and ABORTED ones have none). */
  count: number;
  mean: number | null;
  min: number | null;
  q1: number | null;
  median: number | null;
  q3: number | null;
  max: number | null;
}

export interface TaskStepStats {
  taskId: string;
  rollouts: number;
  byStatus: Record<RolloutStatus, number>;
  rewards: RewardDistribution;
}

export interface AgenticStepView {
  step: number;
  /** The step's manifest exists: its rollouts are all in (the view no longer changes). */
  finished: boolean;
  rollouts: number;
  byStatus: Record<RolloutStatus, number>;
  rewards: RewardDistribution;
  /** One entry per task, in the order the step took them. */
  tasks: TaskStepStats[];
}

export interface AgenticStepsView {
  runId: string;
  steps: AgenticStepView[];
}

interface RolloutOutcome {
  taskId: string;
  status: RolloutStatus;
  reward: number | null;
}

const emptyStatus = (): Record<RolloutStatus, number> => ({
  COMPLETED: 0,
  TRUNCATED: 0,
  FAILED: 0,
  ABORTED: 0,
});

/** The value at quantile `q` of sorted values (linear between the two nearest ranks). */
function quantile(sorted: readonly number[], q: number): number {
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  const lowValue = sorted[low] as number;
  const highValue = sorted[Math.min(low + 1, sorted.length - 1)] as number;
  return lowValue + (highValue - lowValue) * (at - low);
}

export function rewardDistribution(rewards: readonly number[]): RewardDistribution {
  if (rewards.length === 0)
    return { count: 0, mean: null, min: null, q1: null, median: null, q3: null, max: null };
  const sorted = [...rewards].sort((a, b) => a - b);
  return {
    count: sorted.length,
    mean: sorted.reduce((a, b) => a + b, 0) / sorted.length,
    min: sorted[0] as number,
    q1: quantile(sorted, 0.25),
    median: quantile(sorted, 0.5),
    q3: quantile(sorted, 0.75),
    max: sorted.at(-1) as number,
  };
}

export function stepView(
  step: number,
  finished: boolean,
  outcomes: readonly RolloutOutcome[],
): AgenticStepView {
  const byTask = new Map<string, RolloutOutcome[]>();
  const byStatus = emptyStatus();
  for (const outcome of outcomes) {
    byStatus[outcome.status]++;
    const list = byTask.get(outcome.taskId) ?? [];
    list.push(outcome);
    byTask.set(outcome.taskId, list);
  }
  const rewardsOf = (list: readonly RolloutOutcome[]) =>
    list.map((o) => o.reward).filter((r): r is number => r !== null);
  const tasks = [...byTask.entries()].map(([taskId, list]) => {
    const counts = emptyStatus();
    for (const o of list) counts[o.status]++;
    return { taskId, rollouts: list.length, byStatus: counts, rewards: rewardDistribution(rewardsOf(list)) };
  });
  return {
    step,
    finished,
    rollouts: outcomes.length,
    byStatus,
    rewards: rewardDistribution(rewardsOf(outcomes)),
    tasks,
  };
}

interface ManifestView {
  stepId?: string;
  groups?: StepGroup[];
}

export class AgenticStepsViews {
  private readonly finished = new Map<string, AgenticStepView>();

  constructor(private readonly store: SampleStore) {}

  /** The run's steps (newest MAX_AGENTIC_STEPS), or null when the store has nothing of the run. */
  async view(runId: string): Promise<AgenticStepsView | null> {
    const found = await this.stepKeys(runId);
    if (found.size === 0) return null;
    const chosen = [...found.keys()].sort((a, b) => a - b).slice(-MAX_AGENTIC_STEPS);
    const steps: AgenticStepView[] = [];
    for (const step of chosen) {
      const parts = found.get(step) as { batches: number[]; manifest: string | null };
      steps.push(await this.step(runId, step, parts));
    }
    return { runId, steps };
  }

  private async step(
    runId: string,
    step: number,
    parts: { batches: number[]; manifest: string | null },
  ): Promise<AgenticStepView> {
    const manifest = parts.manifest ? await this.store.get<ManifestView>(parts.manifest) : null;
    const cacheKey = manifest ? `${runId}\u0000${step}\u0000${manifest.stepId ?? ''}` : null;
    const cached = cacheKey ? this.finished.get(cacheKey) : undefined;
    if (cached) return cached;
    const outcomes: RolloutOutcome[] = [];
    if (parts.batches.length > 0) {
      for (const index of parts.batches.sort((a, b) => a - b)) {
        const record = await this.store.get<BatchResultsRecord>(batchResultsKey(runId, step, index));
        for (const r of record?.results ?? [])
          outcomes.push({ taskId: r.taskId, status: r.status, reward: r.reward });
      }
    } else {
      for (const group of manifest?.groups ?? [])
        for (const r of group.rollouts)
          outcomes.push({ taskId: group.taskId, status: r.status as RolloutStatus, reward: r.reward });
    }
    const view = stepView(step, manifest !== null, outcomes);
    if (cacheKey) {
      if (this.finished.size >= CACHE_SIZE) {
        const oldest = this.finished.keys().next().value;
        if (oldest !== undefined) this.finished.delete(oldest);
      }
      this.finished.set(cacheKey, view);
    }
    return view;
  }

  /** Steps with a batch record or a manifest: `agentic/<runId>/batches/<step>/<i>`, `agentic/<runId>/steps/<step>`. */
  private async stepKeys(
    runId: string,
  ): Promise<Map<number, { batches: number[]; manifest: string | null }>> {
    const encoded = encodeURIComponent(runId);
    const found = new Map<number, { batches: number[]; manifest: string | null }>();
    const entry = (step: number) => {
      let parts = found.get(step);
      if (!parts) {
        parts = { batches: [], manifest: null };
        found.set(step, parts);
      }
      return parts;
    };
    for (const key of await this.store.list(`agentic/${encoded}/`)) {
      const parts = key.split('/');
      // A store that lists by string prefix may reach another run's folder.
      if (parts[0] !== 'agentic' || parts[1] !== encoded) continue;
      const step = Number(parts[3]);
      if (!Number.isInteger(step) || step < 0) continue;
      if (parts[2] === 'batches' && parts.length === 5) {
        const index = Number(parts[4]);
        if (Number.isInteger(index)) entry(step).batches.push(index);
      } else if (parts[2] === 'steps' && parts.length === 4) entry(step).manifest = key;
    }
    return found;
  }
}
