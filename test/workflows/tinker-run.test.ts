// A training run on Tinker, end to end through Temporal: OPENCLAW_TRAINER=tinker with the Tinker sidecar as
// both the trainer and the serving engine. The sidecar is the real process; Tinker's cloud is the FAKE SDK
// (engine/tests/fake_tinker.py, sampling from a real tiny model), since the cloud is unreachable here.

import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startTinkerSidecar,
  type TinkerSidecarProcess,
} from '../../activities/trainer-backends/tinker-sidecar-process.js';
import { TINKER_SAMPLER_FILE } from '../../activities/trainer-backends/tinker-trainer.js';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import { sampleKey } from '../../core/turn-record.js';
import type { SampleRef, TrainingSample } from '../../core/types.js';
import { FileSampleStore } from '../../store/sample-store.js';
import { trainingWorkflowId } from '../../temporal/workflow-ids.js';
import { trainingInputFromConfig } from '../../workers/control-worker.js';
import { lineageQuery, sampleScoredSignal, trainingStatusQuery } from '../../workflows/training-signals.js';
import { engineCalls } from '../support/engine-calls.js';
import { type RunWorkers, startRunWorkers } from '../support/run-workers.js';
import { connectTestEnvironment, uniqueTaskQueue } from '../support/temporal.js';

const fakeSdkDir = fileURLToPath(new URL('../../engine/tests', import.meta.url));

describe('a training run on Tinker (sidecar with the fake Tinker SDK)', () => {
  let env: TestWorkflowEnvironment;
  let dir: string;
  let sidecar: TinkerSidecarProcess;
  let config: OpenClawConfig;
  let store: FileSampleStore;
  let controlQueue: string;
  let workers: RunWorkers | undefined;

  beforeAll(async () => {
    env = await connectTestEnvironment();
    dir = await mkdtemp(join(tmpdir(), 'tinker-run-'));
    sidecar = await startTinkerSidecar({
      baseModel: 'fake/base',
      loraRank: 8,
      sdkModule: 'fake_tinker',
      checkpointRoots: [dir],
      env: { PYTHONPATH: fakeSdkDir, FAKE_TINKER_STORE: join(dir, 'fake-cloud') },
    });
    controlQueue = uniqueTaskQueue('control');
    const loaded = loadConfig(
      { OPENCLAW_TRAINER: 'tinker', OPENCLAW_TRAINER_TASK_QUEUE: uniqueTaskQueue('trainer') },
      {
        runId: `tk-${controlQueue}`.slice(0, 60),
        dataDir: dir,
        // The sidecar serves: it is the engine, and (by default) the Tinker URL.
        engine: { url: sidecar.url },
        temporal: { taskQueue: controlQueue },
        training: { batchSize: 2, learningRate: 1e-3 },
      },
    );
    if (!loaded.ok) throw new Error(loaded.error);
    config = loaded.config;
    store = new FileSampleStore(join(dir, 'store'));
    workers = await startRunWorkers(config, env, store);
    expect(workers.trainerName).toBe('tinker');
  }, 120_000);

  afterAll(async () => {
    await workers?.stop();
    await sidecar?.stop();
    await env?.teardown();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A real sample: the served policy's own tokens and log-probs for a prompt. */
  async function sampled(sampleId: string, seed: number): Promise<SampleRef> {
    const engine = engineCalls(sidecar.url);
    const prompt = (
      (await engine.request('POST', '/tokenize', { text: 'The answer is' })) as { tokens: number[] }
    ).tokens;
    const reply = await engine.generate({
      input_ids: prompt,
      sampling_params: { temperature: 1, max_new_tokens: 4, seed, ignore_eos: true },
      return_logprob: true,
    });
    const sample: TrainingSample = {
      sampleId,
      sessionId: sampleId.split(':')[0] ?? sampleId,
      turn: 1,
      tokens: [...prompt, ...reply.output_ids],
      responseLength: reply.output_ids.length,
      lossMask: reply.output_ids.map(() => 1),
      rolloutLogProbs: (reply.meta_info.output_token_logprobs ?? []).map((e) => e[0] ?? 0),
      reward: 1,
      policyVersion: 0,
      method: 'rl',
      kind: 'rl',
    };
    await store.put(sampleKey(sampleId), sample);
    return { sampleId, method: 'rl', kind: 'rl', policyVersion: 0, reward: 1, responseLength: 4 };
  }

  it('trains on Tinker, exports sampler weights and serves them as the next version', async () => {
    const handle = await env.client.workflow.start('trainingWorkflow', {
      workflowId: trainingWorkflowId(config.runId),
      taskQueue: controlQueue,
      args: [trainingInputFromConfig(config, config.runId, 'rl')],
    });
    for (const [i, id] of ['a', 'b'].entries())
      await handle.signal(sampleScoredSignal, { ok: true, sample: await sampled(`tk-${id}:1`, i + 1) });

    const deadline = Date.now() + 60_000;
    while ((await handle.query(trainingStatusQuery)).policyVersion < 1) {
      if (Date.now() > deadline) throw new Error('no step after 60 s');
      await new Promise((r) => setTimeout(r, 300));
    }
    const [entry] = await handle.query(lineageQuery, { version: 1 });
    expect(entry?.checkpoint).toBe(join(dir, 'checkpoints', config.runId, entry?.incarnation ?? '?', 'v1'));
    const exported = JSON.parse(
      await readFile(join(entry?.checkpoint ?? '', TINKER_SAMPLER_FILE), 'utf8'),
    ) as {
      model_path: string;
    };
    expect(exported.model_path).toMatch(/^tinker:\/\//);
    expect(existsSync(join(entry?.checkpoint ?? '', 'config.json'))).toBe(false);

    // The sidecar now serves the exported sampler weights as version 1, and samples with them.
    const info = (await engineCalls(sidecar.url).modelInfo()) as Record<string, unknown>;
    expect(info.weight_version).toBe('1');
    expect(info.sampler_path).toBe(exported.model_path);
    await engineCalls(sidecar.url).request('POST', '/v1/chat/completions', {
      model: 'fake/base',
      messages: [{ role: 'user', content: 'hello' }],
      max_tokens: 3,
    });
    const calls = (await readFile(join(dir, 'fake-cloud', 'sample.jsonl'), 'utf8')).trim().split('\n');
    expect((JSON.parse(calls.at(-1) ?? '{}') as { model_path: string }).model_path).toBe(exported.model_path);
    await handle.terminate('test done');
  }, 90_000);
});
