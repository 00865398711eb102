// Scenario: an operator runs training with OPENCLAW_TRAINER=fireworks. Recorded samples (the policy's own
// token ids and log-probs) must train a step on Fireworks through the sidecar, the published version must be
// a sampler snapshot, and publishing must hot-load exactly that snapshot into the deployment; if the ids were
// re-tokenised or the publish skipped, the deployment would serve something other than what was trained.
// End to end through Temporal; the sidecar is the real process, Fireworks' cloud the DOUBLE
// (test/support/python/fireworks_cloud_double.py), which replaces only the network.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FireworksSidecarProcess } from '../../activities/trainer-backends/fireworks-sidecar-process.js';
import { FIREWORKS_SAMPLER_FILE } from '../../activities/trainer-backends/fireworks-trainer.js';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import { sampleKey } from '../../core/turn-record.js';
import type { SampleRef, TrainingSample } from '../../core/types.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { trainingInputFromConfig } from '../../workers/control-worker.js';
import { lineageQuery, sampleScoredSignal, trainingStatusQuery } from '../../workflows/training-signals.js';
import {
  fireworksDoubleCalls,
  fireworksDoubleServedSnapshot,
  startFireworksSidecarWithDouble,
} from '../support/fireworks-cloud-double.js';
import { type RunWorkers, startRunWorkers } from '../support/run-workers.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';

describe('a training run on Fireworks (sidecar with the Fireworks cloud double)', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let cloud: string;
  let sidecar: FireworksSidecarProcess;
  let config: OpenClawConfig;
  let store: FileSampleStore;
  let controlQueue: string;
  let workers: RunWorkers | undefined;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'fireworks-run-'));
    cloud = join(dir, 'cloud');
    sidecar = await startFireworksSidecarWithDouble(cloud, [dir]);
    controlQueue = uniqueTaskQueue('control');
    const loaded = loadConfig(
      {
        OPENCLAW_TRAINER: 'fireworks',
        OPENCLAW_FIREWORKS_URL: sidecar.url,
        OPENCLAW_TRAINER_TASK_QUEUE: uniqueTaskQueue('trainer'),
      },
      {
        runId: `fw-${controlQueue}`.slice(0, 60),
        dataDir: dir,
        // Publishing goes to the serving side's `/update_weights_from_disk`: the sidecar, which hot-loads.
        engine: { url: sidecar.url },
        temporal: { taskQueue: controlQueue },
        training: { batchSize: 2, learningRate: 1e-3 },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    config = loaded.config;
    store = new FileSampleStore(join(dir, 'store'));
    workers = await startRunWorkers(config, env, store);
    expect(workers.trainerName).toBe('fireworks');
  }, 120_000);

  afterAll(async () => {
    await workers?.stop();
    await sidecar?.stop();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A recorded sample: prompt ids then the sampled response ids, with their rollout log-probs. */
  async function recorded(sampleId: string, response: number[]): Promise<SampleRef> {
    const sample: TrainingSample = {
      sampleId,
      sessionId: sampleId.split(':')[0] ?? sampleId,
      turn: 1,
      tokens: [151644, 872, 198, 3838, ...response],
      responseLength: response.length,
      lossMask: response.map(() => 1),
      rolloutLogProbs: response.map(() => Math.log(1 / 4096)),
      reward: 1,
      policyVersion: 0,
      method: 'rl',
      kind: 'rl',
    };
    await store.put(sampleKey(sampleId), sample);
    return {
      sampleId,
      method: 'rl',
      kind: 'rl',
      policyVersion: 0,
      reward: 1,
      responseLength: response.length,
    };
  }

  it('trains the recorded ids on Fireworks and hot-loads the published snapshot', async () => {
    const handle = await env.client.workflow.start('trainingWorkflow', {
      workflowId: trainingWorkflowId(config.runId),
      taskQueue: controlQueue,
      args: [trainingInputFromConfig(config, config.runId, 'rl')],
    });
    const responses = [
      [9707, 11, 1879],
      [40, 1079, 264, 13],
    ];
    for (const [i, response] of responses.entries())
      await handle.signal(sampleScoredSignal, { ok: true, sample: await recorded(`fw-${i}:1`, response) });

    const deadline = Date.now() + 60_000;
    while ((await handle.query(trainingStatusQuery)).policyVersion < 1) {
      if (Date.now() > deadline) throw new Error('no step after 60 s');
      await new Promise((r) => setTimeout(r, 300));
    }
    // The datums are the recorded ids, shifted by one; nothing was re-tokenised.
    const [step] = await fireworksDoubleCalls(cloud, 'forward_backward_custom');
    const datums = (step?.args[0] ?? []) as { model_input: number[]; target_tokens: number[] }[];
    const sent = datums
      .map((d) => [d.model_input[0], ...d.target_tokens])
      .sort((a, b) => a.length - b.length);
    expect(sent).toEqual(responses.map((r) => [151644, 872, 198, 3838, ...r]));
    const [adam] = await fireworksDoubleCalls(cloud, 'optim_step');
    expect(adam?.args[0]).toMatchObject({ learning_rate: 1e-3 });

    const [entry] = await handle.query(lineageQuery, { version: 1 });
    const exported = JSON.parse(
      await readFile(join(entry?.checkpoint ?? '', FIREWORKS_SAMPLER_FILE), 'utf8'),
    ) as { snapshot_name: string };
    expect(await fireworksDoubleServedSnapshot(cloud)).toBe(exported.snapshot_name);
    await handle.terminate('test done');
  }, 90_000);
});
