// A training step's GRPO groups (one per task, rollouts in sample order), built from its batches' slot
// results; pure, so the training workflow (older runs) and the bookkeeping activity build them alike.
import type { SlotResult } from '../workflows/agentic-signals.js';

export interface GroupRollout {
  rolloutId: string;
  status: string;
  /** Null for rollouts that were not evaluated. */
  reward: number | null;
  steps: number;
  stepScores: number[] | null;
}

export interface StepGroup {
  groupId: string;
  taskId: string;
  /** Every rollout of the group finished and was evaluated (informational: failed ones are left out anyway). */
  complete: boolean;
  rollouts: GroupRollout[];
}

/** A rollout whose outcome can be trained: it finished (or hit its turn limit) and was evaluated. */
export function isTrainable(rollout: GroupRollout): boolean {
  return (rollout.status === 'COMPLETED' || rollout.status === 'TRUNCATED') && rollout.reward !== null;
}

/** The step's groups from its slot results: id `<group>:<taskId>`, in group order. */
export function groupsOfSlots(results: readonly SlotResult[]): StepGroup[] {
  const byGroup = new Map<number, SlotResult[]>();
  for (const result of results) {
    const group = byGroup.get(result.group) ?? [];
    group.push(result);
    byGroup.set(result.group, group);
  }
  return [...byGroup.entries()]
    .sort(([a], [b]) => a - b)
    .map(([group, slots]) => {
      const sorted = [...slots].sort((a, b) => a.sample - b.sample);
      const rollouts = sorted.map((r) => ({
        rolloutId: r.rolloutId,
        status: r.status,
        reward: r.reward,
        steps: r.steps,
        stepScores: r.stepScores,
      }));
      const taskId = sorted[0]?.taskId ?? '';
      return { groupId: `${group}:${taskId}`, taskId, complete: rollouts.every(isTrainable), rollouts };
    });
}
