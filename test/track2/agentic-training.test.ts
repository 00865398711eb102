import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agenticStepKey, type StepManifest } from '../../activities/agentic-activities.js';
import { ReferenceTrainerBackend } from '../../activities/trainer-backends/reference-trainer.js';
import { createTrainingActivities } from '../../activities/training-activities.js';
import { isConstantRewardGroup, normaliseGroupRewards } from '../../core/advantages.js';
import { isTrainable } from '../../core/step-groups.js';
import { sampleKey } from '../../core/turn-record.js';
import type { TrainingSample } from '../../core/types.js';
import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { agenticWorkflowId } from '../../temporal/workflow-ids.js';
import {
  type AgenticTrainingInput,
  agenticStatusQuery,
  type StepSummary,
} from '../../workflows/agentic-signals.js';
import { engineCalls } from '../support/engine-calls.js';
import { saveHistory } from '../support/histories.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from './track2-harness.js';

const TASKS = 4;
const N = 3;

// The Track 2 loop end to end: the reference engine (a tiny random model) is the policy and the trainer;
// arith rollouts through the real server; GRPO groups; Track 1's trainStep + publishWeights; two steps, so
// the run continues-as-new once and the second step samples from the published version 1.
describe('agenticTrainingWorkflow with the reference engine as policy and trainer', () => {
  let env: TestWorkflowEnvironment;
  let engine: EngineProcess;
  let engineDir: string;
  let t2: Track2Harness;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    engineDir = await mkdtemp(join(tmpdir(), 'agentic-engine-'));
    engine = await startReferenceEngine({
      model: await makeTinyModel(join(engineDir, 'model')),
      trainer: true,
      // The harness's checkpoints are in a temporary folder of its own.
      checkpointRoots: [tmpdir()],
    });
    t2 = await startTrack2(env, {
      // The control worker's role: the workflows and Track 1's training activities on one queue.
      activities: (store, dir) =>
        createTrainingActivities({
          store,
          trainer: new ReferenceTrainerBackend(engine.url),
          serving: new ReferenceAdapter(engine.url),
          checkpointDir: join(dir, 'checkpoints'),
        }),
    });
    await t2.startEnvHost({ hostId: `agentic-${process.pid}` });
  }, 180_000);

  afterAll(async () => {
    await t2?.close();
    await engine?.stop();
    if (engineDir) await rm(engineDir, { recursive: true, force: true });
    await env?.teardown();
  });

  it('groups rollouts per task, drops constant groups, trains and publishes each step', async () => {
    const runId = 'agentic-e2e';
    const input: AgenticTrainingInput = {
      runId,
      env: 'arith',
      taskIds: Array.from({ length: 2 * TASKS }, (_, k) => `arith-${k}`),
      tasksPerStep: TASKS,
      samplesPerTask: N,
      rolloutsInFlight: 8,
      rolloutsPerBatch: 6, // two groups per batch: a tree of two batches per step
      maxRetriesPerRollout: 1,
      steps: 2,
      maxTurns: 2,
      maxParseErrors: 2,
      contextBudgetTokens: 3000,
      envTaskQueue: t2.envQueue,
      policy: { url: engine.url, sampling: { maxNewTokens: 12, temperature: 1, seed: 7 } },
      training: { taskQueue: t2.workflowQueue, loss: {}, optimizer: { learningRate: 1e-3 } },
    };
    const handle = await env.client.workflow.start('agenticTrainingWorkflow', {
      taskQueue: t2.workflowQueue,
      workflowId: agenticWorkflowId(runId),
      args: [input],
    });
    const summaries = (await handle.result()) as StepSummary[];
    expect(summaries.map((s) => s.step)).toEqual([0, 1]);
    expect(summaries.map((s) => s.policyVersion)).toEqual([1, 2]);
    expect(String((await engineCalls(engine.url).modelInfo()).weight_version)).toBe('2');
    const status = await handle.query(agenticStatusQuery);
    expect(status).toMatchObject({ phase: 'done', stepsCompleted: 2, policyVersion: 2 });

    for (const summary of summaries) {
      const manifest = await t2.store.get<StepManifest>(agenticStepKey(runId, summary.step));
      if (!manifest) throw new Error(`no manifest for step ${summary.step}`);
      expect(summary.rollouts).toBe(TASKS * N);
      expect(summary.groups).toBe(TASKS);
      expect(manifest.groups).toHaveLength(TASKS);
      // The step's tasks, in turn from the pool.
      expect(manifest.groups.map((g) => g.taskId)).toEqual(
        Array.from({ length: TASKS }, (_, i) => `arith-${summary.step * TASKS + i}`),
      );
      // Failed rollouts are left out; each group trains on the rest.
      const trainable = manifest.groups
        .map((g) => ({ ...g, rollouts: g.rollouts.filter(isTrainable) }))
        .filter((g) => g.rollouts.length > 0);
      expect(manifest.droppedRolloutIds).toEqual(
        manifest.groups.flatMap((g) => g.rollouts.filter((r) => !isTrainable(r)).map((r) => r.rolloutId)),
      );
      const constant = trainable.filter((g) => isConstantRewardGroup(g.rollouts.map((r) => r.reward ?? 0)));
      const varied = trainable.filter((g) => !constant.includes(g));
      // Constant groups are dropped (the first one kept when every group is constant).
      expect(manifest.constantGroupIds).toEqual(
        (varied.length > 0 ? constant : constant.slice(1)).map((g) => g.groupId),
      );
      expect(summary.groupsConstant).toBe(manifest.constantGroupIds.length);
      expect(summary.rolloutsDropped).toBe(manifest.droppedRolloutIds.length);
      expect(summary.samplesTrained).toBe(manifest.sampleIds.length);
      expect(summary.samplesTrained).toBeGreaterThan(0);
      // Every step sample of a kept rollout carries the rollout's GRPO advantage as its reward.
      for (const group of trainable.filter((g) => !manifest.constantGroupIds.includes(g.groupId))) {
        const advantages = normaliseGroupRewards(group.rollouts.map((r) => r.reward ?? 0));
        for (const [i, rollout] of group.rollouts.entries()) {
          for (let step = 0; step < rollout.steps; step++) {
            const sample = await t2.store.get<TrainingSample>(sampleKey(`${rollout.rolloutId}:${step}`));
            expect(sample?.reward).toBeCloseTo(advantages[i] ?? Number.NaN, 9);
            // The second step's rollouts were sampled by the weights the first step published.
            expect(sample?.policyVersion).toBe(summary.step);
            expect(sample?.lossMask).toHaveLength(sample?.responseLength ?? -1);
            expect(sample?.rolloutLogProbs).toHaveLength(sample?.responseLength ?? -1);
            expect(sample?.tokens.length).toBeGreaterThan(sample?.responseLength ?? Number.POSITIVE_INFINITY);
          }
        }
      }
    }
    console.log(
      'agentic steps:',
      JSON.stringify(
        summaries.map((s) => ({
          step: s.step,
          byStatus: s.byStatus,
          constant: s.groupsConstant,
          failed: s.groupsFailed,
          dropped: s.rolloutsDropped,
          samples: s.samplesTrained,
          meanReward: s.meanReward,
        })),
      ),
    );

    if (process.env.RECORD_HISTORIES) {
      await saveHistory(env, agenticWorkflowId(runId), 'agentic-training-workflow-results-in-store');
      await saveHistory(env, `${agenticWorkflowId(runId)}-s1-b0`, 'rollout-batch-workflow-in-batch');
    }
  }, 240_000);
});
