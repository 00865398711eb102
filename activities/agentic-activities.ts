// The Track 2 training step's bookkeeping, on the shared env queue (every env host has the environments
// and the sample store): list an environment's tasks, and turn a step's finished rollouts into training
// samples. GRPO (spec 10.0, --dynamic_history): one outcome per rollout, normalised within its task group
// and broadcast to every step sample of the rollout; constant-reward groups dropped (the first kept when
// all are). step_wise: each step's value (outcome + coef · judge score) normalised per (group, step index).
// A sample's advantage is stored as its reward, and the trainer's GRPO loss broadcasts it to its tokens.

import { ApplicationFailure } from '@temporalio/activity';
import { grpoAdvantages, normaliseStepWise, type StepWiseSample } from '../core/advantages.js';
import { rolloutSampleId } from '../core/sample-id.js';
import { sampleKey } from '../core/turn-record.js';
import type { TrainingSample } from '../core/types.js';
import type { EnvironmentRegistry } from '../environments/environment.js';
import { type RolloutStepRecord, rolloutKeys } from './rollout-records.js';
import type { SampleStore } from './sample-store.js';
import { storeKey } from './sample-store.js';

export interface AgenticDependencies {
  store: SampleStore;
  registry: EnvironmentRegistry;
}

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
  /** False when a rollout of the group still failed after its retries: the group trains nothing. */
  complete: boolean;
  rollouts: GroupRollout[];
}

export interface AssembleInput {
  runId: string;
  stepId: string;
  step: number;
  advantage: 'grpo' | 'step_wise';
  /** Weight of step judge scores; null without a step judge. */
  judgeCoef: number | null;
  groups: StepGroup[];
}

export interface AssembleResult {
  sampleIds: string[];
  groupsKept: number;
  groupsConstant: number;
  groupsFailed: number;
  meanReward: number | null;
}

export interface StepManifest extends AssembleInput {
  advantages: Record<string, number>;
  constantGroupIds: string[];
  sampleIds: string[];
}

export function agenticStepKey(runId: string, step: number): string {
  return storeKey('agentic', runId, 'steps', step);
}

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
    };
    await store.put(sampleKey(sampleId), sample);
    return sampleId;
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

    /** Computes the step's advantages, stores its training samples and a manifest; returns the sample ids. */
    async assembleStepSamples(input: AssembleInput): Promise<AssembleResult> {
      const coef = input.judgeCoef ?? 0;
      const complete = input.groups.filter((g) => g.complete);
      const evaluated = input.groups
        .flatMap((g) => g.rollouts.map((r) => r.reward))
        .filter((r) => r !== null);
      const advantages: Record<string, number> = {};
      const sampleIds: string[] = [];
      let constantGroupIds: string[] = [];

      if (input.advantage === 'grpo') {
        const outcome = (r: GroupRollout) =>
          (r.reward ?? 0) + (r.stepScores && r.stepScores.length > 0 ? coef * mean(r.stepScores) : 0);
        const result = grpoAdvantages(
          complete.map((g) => ({ groupId: g.groupId, rewards: g.rollouts.map(outcome) })),
        );
        constantGroupIds = result.droppedGroupIds;
        for (const kept of result.groups) {
          const group = complete.find((g) => g.groupId === kept.groupId);
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
        for (const group of complete) {
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
        constantGroupIds = complete
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

      const manifest: StepManifest = { ...input, advantages, constantGroupIds, sampleIds };
      await store.put(agenticStepKey(input.runId, input.step), manifest);
      return {
        sampleIds,
        groupsKept: complete.length - constantGroupIds.length,
        groupsConstant: constantGroupIds.length,
        groupsFailed: input.groups.length - complete.length,
        meanReward: evaluated.length > 0 ? mean(evaluated) : null,
      };
    },
  };
}

export type AgenticActivities = ReturnType<typeof createAgenticActivities>;
