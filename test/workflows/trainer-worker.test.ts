// A training run whose steps run on a trainer worker chosen by the config: OPENCLAW_TRAINER=slime with the
// reference engine image standing in for slime's (same epoch contract, CPU), on its own task queue. The
// control worker hosts the workflow and the bookkeeping; the trainer worker trains in a container and loads
// the new version into the serving engine. Real Temporal, real Docker, a real engine process.

import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EPOCH_LABEL } from '../../activities/trainer-backends/slime-trainer.js';
import { trainerFromConfig } from '../../activities/trainer-backends/trainer-from-config.js';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import { sampleKey } from '../../core/turn-record.js';
import type { SampleRef, TrainingSample } from '../../core/types.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { trainingInputFromConfig } from '../../workers/control-worker.js';
import { createTrainerWorker } from '../../workers/trainer-worker.js';
import { lineageQuery, sampleScoredSignal, trainingStatusQuery } from '../../workflows/training-signals.js';
import { engineCalls } from '../support/engine-calls.js';
import { saveHistory } from '../support/histories.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';
import { createTestControlWorker } from '../support/workflow-bundle.js';

const IMAGE = 'openclaw/engine:dev';
const ENGINE_SOURCE = resolve('engine/openclaw_engine');

describe('a trainer worker selected by the config (slime epochs in containers)', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let engine: EngineProcess;
  let config: OpenClawConfig;
  let store: FileSampleStore;
  let controlQueue: string;
  let workers: { worker: Worker; running: Promise<void> }[] = [];
  const logs: string[] = [];

  beforeAll(async () => {
    await new Docker()
      .getImage(IMAGE)
      .inspect()
      .catch(() => {
        throw new Error(`image ${IMAGE} is missing: build it with bash docker/build-images.sh`);
      });
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'trainer-worker-'));
    const model = await makeTinyModel(join(dir, 'model'));
    // Serving only: the engine does not train (it has no trainer routes), so a step can only run on the slime side.
    engine = await startReferenceEngine({ model });
    controlQueue = uniqueTaskQueue('control');
    const loaded = loadConfig(
      {
        OPENCLAW_TRAINER: 'slime',
        OPENCLAW_TRAINER_TASK_QUEUE: uniqueTaskQueue('trainer'),
        OPENCLAW_TRAINER_IMAGE: IMAGE,
        OPENCLAW_TRAINER_EPOCH_COMMAND: 'reference',
        OPENCLAW_TRAINER_GPUS: '0',
        OPENCLAW_TRAINER_BASE_MODEL: model,
      },
      {
        runId: `tw-${controlQueue}`.slice(0, 60),
        dataDir: dir,
        engine: { url: engine.url },
        temporal: { taskQueue: controlQueue },
        training: { batchSize: 2, learningRate: 1e-3 },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    config = loaded.config;
    store = new FileSampleStore(join(dir, 'store'));

    const control = await createTestControlWorker(config, env, { store });
    const trainer = await createTrainerWorker(config, env.nativeConnection, {
      store,
      // The image's engine package may predate this checkout's `train-epoch`: run this checkout's code in it.
      trainer: trainerFromConfig(config, {
        binds: [`${ENGINE_SOURCE}:/opt/engine/openclaw_engine:ro`],
        onLog: (line) => logs.push(line),
      }),
    });
    workers = [control, trainer.worker].map((worker) => ({ worker, running: worker.run() }));
  }, 180_000);

  afterAll(async () => {
    for (const { worker } of workers) worker.shutdown();
    await Promise.all(workers.map(({ running }) => running.catch(() => undefined)));
    await engine?.stop();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function storedSample(sampleId: string): Promise<SampleRef> {
    const prompt = [5, 6, 7, 8];
    const response = [9, 10, 11];
    const sample: TrainingSample = {
      sampleId,
      sessionId: sampleId.split(':')[0] ?? sampleId,
      turn: 1,
      tokens: [...prompt, ...response],
      responseLength: response.length,
      lossMask: response.map(() => 1),
      rolloutLogProbs: response.map(() => -2),
      reward: 1,
      policyVersion: 0,
      method: 'rl',
      kind: 'rl',
    };
    await store.put(sampleKey(sampleId), sample);
    return { sampleId, method: 'rl', kind: 'rl', policyVersion: 0, reward: 1, responseLength: 3 };
  }

  it('trains the step in an epoch container on the trainer queue and serves the new version', async () => {
    const input = trainingInputFromConfig(config, config.runId, 'rl');
    expect(input.settings?.trainerTaskQueue).toBe(config.trainer.taskQueue);
    const handle = await env.client.workflow.start('trainingWorkflow', {
      workflowId: trainingWorkflowId(config.runId),
      taskQueue: controlQueue,
      args: [input],
    });
    for (const id of ['a', 'b'])
      await handle.signal(sampleScoredSignal, { ok: true, sample: await storedSample(`tw-${id}:1`) });

    const deadline = Date.now() + 150_000;
    for (;;) {
      const status = await handle.query(trainingStatusQuery);
      if (status.policyVersion >= 1) break;
      if (Date.now() > deadline) throw new Error(`no step after 150 s: ${JSON.stringify(status)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const [entry] = await handle.query(lineageQuery, { version: 1 });
    // The slime backend's own figures: the step ran in a container.
    expect(entry?.metrics.epoch_container_s).toBeGreaterThan(0);
    expect(entry?.checkpoint).toBe(join(dir, 'checkpoints', config.runId, entry?.incarnation ?? '?', 'v1'));
    expect(existsSync(join(entry?.checkpoint ?? '', 'config.json'))).toBe(true);
    expect((await engineCalls(engine.url).modelInfo()).weight_version).toBe('1');
    expect(logs.some((line) => line.includes('"event": "ready"'))).toBe(true);
    const left = await new Docker().listContainers({ all: true, filters: { label: [EPOCH_LABEL] } });
    expect(left.filter((c) => c.Labels[EPOCH_LABEL]?.startsWith(config.runId))).toEqual([]);
    // `RECORD_HISTORIES=1` refreshes the history the replay test checks this shape of the run against.
    if (process.env.RECORD_HISTORIES)
      await saveHistory(env, trainingWorkflowId(config.runId), 'training-workflow-trainer-queue');
    await handle.terminate('test done');
  }, 200_000);
});
