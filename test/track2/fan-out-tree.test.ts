import { describe, expect, it } from 'vitest';
import { agenticTrainingInputSchema } from '../../core/rollout-settings.js';
import type { RolloutSlot } from '../../workflows/agentic-signals.js';
import { batchSlots, laneWindows, tasksForStep } from '../../workflows/agentic-step-plan.js';
import { rolloutIdFor } from '../../workflows/rollout-batch-workflow.js';

const slots = (groups: number, n: number): RolloutSlot[] =>
  Array.from({ length: groups * n }, (_, i) => ({
    group: Math.floor(i / n),
    sample: i % n,
    taskId: `t${Math.floor(i / n)}`,
  }));

describe('the fan-out tree', () => {
  it('keeps whole groups in a batch and batches at most perBatch rollouts', () => {
    const batches = batchSlots(slots(10, 4), 10);
    expect(batches.map((b) => b.length)).toEqual([8, 8, 8, 8, 8]);
    for (const batch of batches) expect(new Set(batch.map((s) => s.group)).size).toBe(batch.length / 4);
    expect(batchSlots(slots(3, 4), 4).map((b) => b.length)).toEqual([4, 4, 4]);
    expect(batchSlots(slots(3, 4), 1000)).toHaveLength(1);
    // 250,000 rollouts in groups of 5 at 250 per batch: exactly the 1,000 children a parent may have.
    expect(batchSlots(slots(50_000, 5), 250)).toHaveLength(1000);
  });

  it('splits the sliding window over the batches that run at once', () => {
    expect(laneWindows(64, 1)).toEqual([64]);
    expect(laneWindows(10, 3)).toEqual([4, 3, 3]);
    expect(laneWindows(2, 5)).toEqual([1, 1]); // never more rollouts in flight than the window
    expect(laneWindows(500, 20).reduce((a, b) => a + b, 0)).toBe(500);
    // With a floor per batch: 200 in flight over 40 batches runs 8 of them at once, 25 each, not 40 of 5.
    expect(laneWindows(200, 40, 25)).toEqual(Array.from({ length: 8 }, () => 25));
    expect(laneWindows(210, 40, 25)).toEqual([27, 27, 26, 26, 26, 26, 26, 26]);
    expect(laneWindows(10, 40, 25)).toEqual([10]); // a window below the floor still runs
    expect(laneWindows(200, 3, 25)).toEqual([67, 67, 66]); // fewer batches than the floor allows: all
  });

  it('takes each step its tasks in turn from the pool', () => {
    const pool = ['a', 'b', 'c', 'd', 'e'];
    expect(tasksForStep(pool, 0, 2)).toEqual(['a', 'b']);
    expect(tasksForStep(pool, 1, 2)).toEqual(['c', 'd']);
    expect(tasksForStep(pool, 2, 2)).toEqual(['e', 'a']);
    expect(tasksForStep(pool, 3, undefined)).toEqual(pool);
    expect(tasksForStep(pool, 0, 9)).toEqual(pool);
  });

  it('names rollouts by slot and attempt, so a retry gets a fresh sandbox', () => {
    expect(rolloutIdFor('run-s0', 3, 1, 0)).toBe('run-s0-g3-n1-a0');
    expect(rolloutIdFor('run-s0', 3, 1, 1)).toBe('run-s0-g3-n1-a1');
  });

  it('validates the start input the UI sends', () => {
    const ok = agenticTrainingInputSchema.safeParse({
      runId: 'r',
      env: 'arith',
      taskSet: { source: 'all' },
      policy: { url: 'http://e:1' },
    });
    expect(ok.success).toBe(true);
    expect(ok.data).toMatchObject({
      samplesPerTask: 4,
      rolloutsInFlight: 64,
      rolloutsPerBatch: 250,
      steps: 1,
      maxTurns: 10,
      maxParseErrors: 3,
    });
    const bad = agenticTrainingInputSchema.safeParse({
      runId: 'r',
      env: 'arith',
      taskIds: ['a'],
      samplesPerTask: 8,
      rolloutsPerBatch: 4,
      policy: { url: 'http://e:1' },
    });
    expect(bad.error?.issues[0]?.message).toMatch(/must fit in one batch/);
    expect(
      agenticTrainingInputSchema.safeParse({
        runId: 'r',
        env: 'arith',
        taskIds: ['a'],
        policy: { url: 'http://e:1' },
        extra: 1,
      }).success,
    ).toBe(false);
  });
});
