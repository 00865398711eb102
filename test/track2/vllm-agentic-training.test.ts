// Track 2 with a real vLLM as the policy (its CPU build) and the reference engine training: arith rollouts
// whose policy steps go through the vLLM adapter (render with vLLM's template, exact ids and log-probs from
// vLLM, its hermes tool parser), GRPO groups, trainStep on the reference trainer, publishWeights into vLLM;
// the second step samples from the version the first one published.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agenticStepKey, type StepManifest } from '../../activities/agentic-activities.js';
import type { RolloutStepRecord } from '../../activities/rollout-records.js';
import { rolloutKeys } from '../../activities/rollout-records.js';
import { ReferenceTrainerBackend } from '../../activities/trainer-backends/reference-trainer.js';
import { createTrainingActivities } from '../../activities/training-activities.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { VllmAdapter } from '../../engines/vllm-adapter.js';
import { startVllm, type VllmProcess } from '../../engines/vllm-process.js';
import { agenticWorkflowId } from '../../temporal/workflow-ids.js';
import type { AgenticTrainingInput, StepSummary } from '../../workflows/agentic-signals.js';
import { connectTestEnvironment } from '../support/temporal.js';
import { startTrack2, type Track2Harness } from './track2-harness.js';

describe('agenticTrainingWorkflow with vLLM as the policy', () => {
  let env: TestWorkflowEnvironment;
  let vllm: VllmProcess;
  let trainer: EngineProcess;
  let dir: string;
  let t2: Track2Harness;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'agentic-vllm-'));
    const model = await makeTinyModel(join(dir, 'model'), 0, 64);
    [vllm, trainer] = await Promise.all([
      startVllm({ model, servedModelName: 'default', device: 'cpu' }),
      // The harness's checkpoints are in a temporary folder of its own.
      startReferenceEngine({ model, trainer: true, checkpointRoots: [tmpdir()] }),
    ]);
    t2 = await startTrack2(env, {
      activities: (store, workDir) =>
        createTrainingActivities({
          store,
          trainer: new ReferenceTrainerBackend(trainer.url),
          serving: new VllmAdapter(vllm.url),
          checkpointDir: join(workDir, 'checkpoints'),
        }),
    });
    await t2.startEnvHost({ hostId: `agentic-vllm-${process.pid}` });
  }, 600_000);

  afterAll(async () => {
    await t2?.close();
    await vllm?.stop();
    await trainer?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
    await env?.teardown();
  });

  it('rolls out through vLLM, trains, publishes into vLLM, and samples step 2 from version 1', async () => {
    const runId = `agentic-vllm-${Date.now().toString(36)}`;
    const input: AgenticTrainingInput = {
      runId,
      env: 'arith',
      taskIds: Array.from({ length: 4 }, (_, k) => `arith-${k}`),
      tasksPerStep: 2,
      samplesPerTask: 2,
      rolloutsInFlight: 4,
      rolloutsPerBatch: 4,
      maxRetriesPerRollout: 1,
      steps: 2,
      maxTurns: 2,
      maxParseErrors: 2,
      contextBudgetTokens: 3000,
      envTaskQueue: t2.envQueue,
      policy: {
        url: vllm.url,
        engine: 'vllm',
        model: 'default',
        sampling: { maxNewTokens: 12, temperature: 1, seed: 7 },
      },
      training: { taskQueue: t2.workflowQueue, loss: {}, optimizer: { learningRate: 1e-3 } },
    };
    const handle = await env.client.workflow.start('agenticTrainingWorkflow', {
      taskQueue: t2.workflowQueue,
      workflowId: agenticWorkflowId(runId),
      args: [input],
    });
    const summaries = (await handle.result()) as StepSummary[];
    expect(summaries.map((s) => s.policyVersion)).toEqual([1, 2]);
    expect(await new VllmAdapter(vllm.url).weightVersion()).toBe('2');
    for (const summary of summaries) {
      const manifest = await t2.store.get<StepManifest>(agenticStepKey(runId, summary.step));
      const rollout = manifest?.groups.flatMap((g) => g.rollouts)[0];
      if (!rollout) throw new Error(`no rollout in step ${summary.step}`);
      const step = await t2.store.get<RolloutStepRecord>(rolloutKeys.step(rollout.rolloutId, 0));
      // vLLM's own ids and one log-prob per sampled token, from the version that served the step.
      expect(step?.promptIds.length).toBeGreaterThan(0);
      expect(step?.responseLogProbs).toHaveLength(step?.responseIds.length ?? -1);
      expect(step?.policyVersion).toBe(summary.step);
    }
  }, 900_000);
});
