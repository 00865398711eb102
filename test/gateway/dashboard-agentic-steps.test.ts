// A Track 2 step as the dashboard shows it, from its rollouts' outcomes: a user training on several tasks sees
// each task's reward distribution; a failed rollout counts in the statuses, never as a reward of 0.

import { describe, expect, it } from 'vitest';
import { rewardDistribution, stepView } from '../../gateway/dashboard/agentic-steps-view.js';

describe("a Track 2 step's per-task rewards", () => {
  it('gives count, mean, min, quartiles and max per task, and status counts per task and step', () => {
    const view = stepView(3, true, [
      { taskId: 'b', status: 'COMPLETED', reward: 1 },
      { taskId: 'a', status: 'COMPLETED', reward: 0 },
      { taskId: 'a', status: 'TRUNCATED', reward: -1 },
      { taskId: 'a', status: 'COMPLETED', reward: 1 },
      { taskId: 'a', status: 'COMPLETED', reward: 1 },
      { taskId: 'b', status: 'FAILED', reward: null },
    ]);
    expect(view).toMatchObject({ step: 3, finished: true, rollouts: 6 });
    expect(view.byStatus).toEqual({ COMPLETED: 4, TRUNCATED: 1, FAILED: 1, ABORTED: 0 });
    expect(view.tasks.map((t) => t.taskId)).toEqual(['b', 'a']);
    const [b, a] = view.tasks;
    // a: -1, 0, 1, 1 sorted; quartiles between the nearest ranks.
    expect(a?.rewards).toEqual({ count: 4, mean: 0.25, min: -1, q1: -0.25, median: 0.5, q3: 1, max: 1 });
    expect(b?.rewards).toEqual({ count: 1, mean: 1, min: 1, q1: 1, median: 1, q3: 1, max: 1 });
    expect(b?.byStatus).toEqual({ COMPLETED: 1, TRUNCATED: 0, FAILED: 1, ABORTED: 0 });
    expect(rewardDistribution([])).toEqual({
      count: 0,
      mean: null,
      min: null,
      q1: null,
      median: null,
      q3: null,
      max: null,
    });
  });
});
