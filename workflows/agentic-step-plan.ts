// How a Track 2 step is cut up: which tasks it takes from the pool, how its rollouts split into batches (one
// child workflow each) and how the run's rollout window is shared among the batches that run at once. Pure.
import type { RolloutCounts, RolloutSlot, RolloutStatus } from './agentic-signals.js';

/** The step's tasks: `perStep` of the pool, taken in turn (step k starts where step k−1 stopped). */
export function tasksForStep(pool: readonly string[], step: number, perStep: number | undefined): string[] {
  const count = Math.min(perStep ?? pool.length, pool.length);
  const start = (step * count) % pool.length;
  return Array.from({ length: count }, (_, i) => pool[(start + i) % pool.length] as string);
}

/** Splits groups into batches of at most `perBatch` rollouts; a group never spans two batches. */
export function batchSlots(slots: readonly RolloutSlot[], perBatch: number): RolloutSlot[][] {
  const batches: RolloutSlot[][] = [];
  let current: RolloutSlot[] = [];
  let group: RolloutSlot[] = [];
  const flushGroup = () => {
    if (current.length + group.length > perBatch && current.length > 0) {
      batches.push(current);
      current = [];
    }
    current.push(...group);
    group = [];
  };
  for (const slot of slots) {
    if (group.length > 0 && group[0]?.group !== slot.group) flushGroup();
    group.push(slot);
  }
  if (group.length > 0) flushGroup();
  if (current.length > 0) batches.push(current);
  return batches;
}

/**
 * Sliding windows of the batches that run at once: rolloutsInFlight split as evenly as it goes, over no more
 * batches than give each `minWindow` rollouts.
 */
export function laneWindows(totalWindow: number, batches: number, minWindow = 1): number[] {
  const lanes = Math.max(1, Math.min(batches, Math.floor(totalWindow / Math.max(1, minWindow))));
  return Array.from(
    { length: lanes },
    (_, i) => Math.floor(totalWindow / lanes) + (i < totalWindow % lanes ? 1 : 0),
  );
}

/**
 * The fewest rollouts a batch runs at once when the step has more batches than the window fills this well:
 * a batch's workflow task takes in every rollout that ended since its last one, so a batch with a handful in
 * flight pays about one workflow task per rollout, and one with dozens a fraction of one. Fewer batches at
 * once, each with a fuller window, keep the same rollouts in flight for fewer workflow tasks.
 */
export const MIN_BATCH_WINDOW = 25;

/** Adds one batch's counts to the step's. */
export function addCounts(total: RolloutCounts, counts: RolloutCounts): void {
  total.rollouts += counts.rollouts;
  for (const status of Object.keys(counts.byStatus) as RolloutStatus[])
    total.byStatus[status] += counts.byStatus[status];
  total.retried += counts.retried;
  total.rewardSum += counts.rewardSum;
  total.rewardCount += counts.rewardCount;
}
