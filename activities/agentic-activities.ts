// The Track 2 training step's bookkeeping, on the shared env queue (every env host has the environments
// and the sample store): list an environment's tasks, keep each batch's slot results in the store, and turn a
// step's finished rollouts into training samples. A rollout that failed or was aborted is left out of its
// group and the group trains on the others (spec 10.0: FAILED/ABORTED → remove_sample). GRPO (spec 10.0,
// --dynamic_history): one outcome per rollout, normalised within its task group and broadcast to every step
// sample of the rollout; constant-reward groups dropped (the first kept when all are). step_wise: each step's
// value (outcome + coef · judge score) normalised per (group, step index). A sample's advantage is stored as
// its reward, and the trainer's GRPO loss broadcasts it to its tokens. The step's rollouts and sample ids
// stay in the store (the batches' records, the step manifest): no workflow payload grows with the step.

import { ApplicationFailure } from '@temporalio/activity';
import { grpoAdvantages, normaliseStepWise, type StepWiseSample } from '../core/advantages.js';
import { rolloutSampleId } from '../core/sample-id.js';
import { type GroupRollout, groupsOfSlots, isTrainable, type StepGroup } from '../core/step-groups.js';
import { sampleKey } from '../core/turn-record.js';
import type { TrainingSample } from '../core/types.js';
import type { EnvironmentRegistry } from '../environments/environment.js';
import type { SampleStore } from '../store/sample-store.js';
import {
  agenticStepKey,
  type BatchResultsRecord,
  batchResultsKey,
  type SlotResult,
} from '../workflows/agentic-signals.js';
import { type RolloutStepRecord, rolloutKeys } from './rollout-records.js';

export interface AgenticDependencies {
  store: SampleStore;
  registry: EnvironmentRegistry;
}

interface AssembleCommon {
  runId: string;
  stepId: string;
  step: number;
  advantage: 'grpo' | 'step_wise';
  /** Weight of step judge scores; null without a step judge. */
  judgeCoef: number | null;
}

/** The step's groups given inline (training runs started before batches kept their results in the store). */
export interface AssembleInput extends AssembleCommon {
  groups: StepGroup[];
}

/** The step's results read from its batches' records (`batchResultsKey(runId, step, i)` for i < batches). */
export interface AssembleFromBatchesInput extends AssembleCommon {
  batches: number;
}

export interface AssembleResult {
  /** The trained sample ids, for inline inputs only; otherwise in the manifest at `manifestKey`. */
  sampleIds?: string[];
  sampleCount: number;
  /** The step manifest: groups, advantages, sample ids (trainStep reads the ids there). */
  manifestKey: string;
  groupsKept: number;
  groupsConstant: number;
  groupsFailed: number;
  rolloutsDropped: number;
  meanReward: number | null;
}

export interface StepManifest extends AssembleCommon {
  groups: StepGroup[];
  advantages: Record<string, number>;
  constantGroupIds: string[];
  /** Rollouts left out of their group (failed or aborted). */
  droppedRolloutIds: string[];
  sampleIds: string[];
}

export type { GroupRollout, StepGroup };
export { agenticStepKey, batchResultsKey };

function mean(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

export function createAgenticActivities(deps: AgenticDependencies) {
  const { store, registry } = deps;

  async function writeSample(rolloutId: string, step: number, advantage: number): Promise<string | null> {
    const sampleId = rolloutSampleId(rolloutId, step);
    const record = await store.get<RolloutStepRecord>(rolloutKeys.step(rolloutId, step));
    if (!record)
      throw ApplicationFailure.nonRetryable(`step record of ${sampleId} is missing`, 'MissingStep');
    if (record.responseIds.length === 0) return null; // nothing was sampled: nothing to train
    const sample: TrainingSample = {
      sampleId,
      sessionId: rolloutId,
      turn: step + 1,
      tokens: [...record.promptIds, ...record.responseIds],
      responseLength: record.responseIds.length,
      lossMask: record.responseIds.map(() => 1),
      rolloutLogProbs: record.responseLogProbs,
      ...(record.temperature !== undefined &&
        record.temperature !== 1 && { temperature: record.temperature }),
      reward: advantage,
      policyVersion: record.policyVersion,
      method: 'rl',
      kind: 'rl',
      ...(record.images && record.images.length > 0 && { images: record.images }),
    };
    await store.put(sampleKey(sampleId), sample);
    return sampleId;
  }

  async function readBatches(input: AssembleFromBatchesInput): Promise<StepGroup[]> {
    const results: SlotResult[] = [];
    for (let batch = 0; batch < input.batches; batch++) {
      const record = await store.get<BatchResultsRecord>(batchResultsKey(input.runId, input.step, batch));
      if (!record)
        throw ApplicationFailure.nonRetryable(
          `batch ${batch} of ${input.stepId} left no results in the store`,
          'MissingBatchResults',
        );
      results.push(...record.results);
    }
    return groupsOfSlots(results);
  }

  async function assemble(common: AssembleCommon, groups: StepGroup[]) {
    const coef = common.judgeCoef ?? 0;
    // Each group trains on its trainable rollouts; the failed and aborted ones are left out.
    const trainable = groups
      .map((g) => ({ ...g, rollouts: g.rollouts.filter(isTrainable) }))
      .filter((g) => g.rollouts.length > 0);
    const droppedRolloutIds = groups.flatMap((g) =>
      g.rollouts.filter((r) => !isTrainable(r)).map((r) => r.rolloutId),
    );
    const evaluated = groups.flatMap((g) => g.rollouts.map((r) => r.reward)).filter((r) => r !== null);
    const advantages: Record<string, number> = {};
    const sampleIds: string[] = [];
    let constantGroupIds: string[] = [];

    if (common.advantage === 'grpo') {
      const outcome = (r: GroupRollout) =>
        (r.reward ?? 0) + (r.stepScores && r.stepScores.length > 0 ? coef * mean(r.stepScores) : 0);
      const result = grpoAdvantages(
        trainable.map((g) => ({ groupId: g.groupId, rewards: g.rollouts.map(outcome) })),
      );
      constantGroupIds = result.droppedGroupIds;
      const byId = new Map(trainable.map((g) => [g.groupId, g]));
      for (const kept of result.groups) {
        const group = byId.get(kept.groupId);
        if (!group) continue;
        for (const [i, rollout] of group.rollouts.entries()) {
          const advantage = kept.advantages[i] ?? 0;
          for (let step = 0; step < rollout.steps; step++) {
            const id = await writeSample(rollout.rolloutId, step, advantage);
            if (id) {
              sampleIds.push(id);
              advantages[id] = advantage;
            }
          }
        }
      }
    } else {
      const owners: GroupRollout[] = [];
      const samples: StepWiseSample[] = [];
      for (const group of trainable) {
        for (const rollout of group.rollouts) {
          owners.push(rollout);
          samples.push({
            groupId: group.groupId,
            steps: Array.from({ length: rollout.steps }, (_, k) => ({
              stepIndex: k,
              value: (rollout.reward ?? 0) + coef * (rollout.stepScores?.[k] ?? 0),
              tokenSpan: [0, 0] as const,
            })),
          });
        }
      }
      const result = normaliseStepWise(samples);
      const dropped = new Set(result.droppedBuckets.map((b) => b.groupId));
      constantGroupIds = trainable
        .filter((g) => dropped.has(g.groupId))
        .filter((g) => result.samples.every((s) => s.groupId !== g.groupId || s.removed))
        .map((g) => g.groupId);
      for (const [i, normalised] of result.samples.entries()) {
        const owner = owners[i];
        if (!owner || normalised.removed) continue;
        for (const step of normalised.steps) {
          const id = await writeSample(owner.rolloutId, step.stepIndex, step.value);
          if (id) {
            sampleIds.push(id);
            advantages[id] = step.value;
          }
        }
      }
    }

    const manifestKey = agenticStepKey(common.runId, common.step);
    const manifest: StepManifest = {
      runId: common.runId,
      stepId: common.stepId,
      step: common.step,
      advantage: common.advantage,
      judgeCoef: common.judgeCoef,
      groups,
      advantages,
      constantGroupIds,
      droppedRolloutIds,
      sampleIds,
    };
    await store.put(manifestKey, manifest);
    return {
      sampleIds,
      sampleCount: sampleIds.length,
      manifestKey,
      groupsKept: trainable.length - constantGroupIds.length,
      groupsConstant: constantGroupIds.length,
      groupsFailed: groups.length - trainable.length,
      rolloutsDropped: droppedRolloutIds.length,
      meanReward: evaluated.length > 0 ? mean(evaluated) : null,
    };
  }

  return {
    async listEnvTasks(input: { env: string; limit?: number }): Promise<string[]> {
      const environment = registry.get(input.env);
      if (!environment)
        throw ApplicationFailure.nonRetryable(
          `unknown environment kind "${input.env}"`,
          'UnknownEnvironment',
        );
      const ids = await environment.listTasks();
      return input.limit === undefined ? ids : ids.slice(0, input.limit);
    },

    /** Keeps a batch's slot results in the store (its workflow then returns only their counts). */
    async recordBatchResults(input: { key: string; record: BatchResultsRecord }): Promise<void> {
      await store.put(input.key, input.record);
    },

    /**
     * Computes the step's advantages, stores its training samples and a manifest (with the sample ids), and
     * returns counts; given its groups inline (older runs), it also returns the sample ids.
     */
    async assembleStepSamples(input: AssembleInput | AssembleFromBatchesInput): Promise<AssembleResult> {
      if ('groups' in input) return assemble(input, input.groups);
      const { sampleIds: _ids, ...counts } = await assemble(input, await readBatches(input));
      return counts;
    },
  };
}

export type AgenticActivities = ReturnType<typeof createAgenticActivities>;
