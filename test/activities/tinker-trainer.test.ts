import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defaultLossConfig,
  defaultOptimizerConfig,
  type TrainerSample,
} from '../../activities/trainer-backend.js';
import {
  startTinkerSidecar,
  type TinkerSidecarProcess,
} from '../../activities/trainer-backends/tinker-sidecar-process.js';
import { TinkerTrainerBackend } from '../../activities/trainer-backends/tinker-trainer.js';
import { describeTrainerBackendContract } from '../contracts/trainer-backend-contract.js';

// The real sidecar process, with the FAKE Tinker SDK (engine/tests/fake_tinker.py) in place of the cloud.
const fakeSdkDir = fileURLToPath(new URL('../../engine/tests', import.meta.url));

const sample: TrainerSample = {
  tokens: [11, 12, 13, 21, 22, 23],
  responseLength: 3,
  lossMask: [1, 0, 1],
  rolloutLogProbs: [-1, -2, -0.5],
  teacherLogProbs: [-0.25, -1, -1.5],
  reward: -1,
};

describe('Tinker trainer backend (sidecar with the fake Tinker SDK)', () => {
  let dir: string;
  let sidecar: TinkerSidecarProcess | undefined;

  const start = async () =>
    startTinkerSidecar({
      baseModel: 'fake/base',
      loraRank: 8,
      sdkModule: 'fake_tinker',
      checkpointRoots: [dir],
      env: { PYTHONPATH: fakeSdkDir, FAKE_TINKER_STORE: join(dir, 'fake-cloud') },
    });

  const sentCalls = async () =>
    (await readFile(join(dir, 'fake-cloud', 'forward_backward.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { datums: { advantages: number[]; target_tokens: number[] }[] });

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'openclaw-tinker-'));
    sidecar = await start();
  }, 90_000);

  afterAll(async () => {
    await sidecar?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  // It restarts the sidecar: the second start may take the sidecar's whole ready time (60 s) on a loaded
  // machine, on top of the steps around it.
  it('trains idempotent steps, checkpoints, survives a restart and exports', async () => {
    if (!sidecar) throw new Error('the sidecar did not start');
    let trainer = new TinkerTrainerBackend(sidecar.url);
    const loss = { ...defaultLossConfig, method: 'combine' as const, wRl: 2, wOpd: 0.5 };
    const metrics = await trainer.trainStep('run-1/step-1', [sample], loss, defaultOptimizerConfig);
    expect(metrics.tokens).toBe(2);
    expect(metrics.duplicate).toBeUndefined();
    // combine = w_opd·(teacher − rollout) + w_rl·reward on trained tokens, after P − 1 = 2 prompt zeros.
    const [call] = await sentCalls();
    expect(call?.datums[0]?.target_tokens).toEqual([12, 13, 21, 22, 23]);
    expect(call?.datums[0]?.advantages).toEqual([0, 0, -1.625, 0, -2.5]);

    const again = await trainer.trainStep('run-1/step-1', [sample], loss, defaultOptimizerConfig);
    expect(again.duplicate).toBe(true);
    expect(await sentCalls()).toHaveLength(1);
    expect(await trainer.hasApplied('run-1/step-1')).toBe(true);

    const checkpoint = join(dir, 'ckpt', 'v1');
    await trainer.saveCheckpoint(checkpoint);
    expect(existsSync(join(checkpoint, 'tinker-checkpoint.json'))).toBe(true);

    // A restarted sidecar starts from the base: the step is gone until the checkpoint is loaded.
    await sidecar.stop();
    sidecar = await start();
    trainer = new TinkerTrainerBackend(sidecar.url);
    expect(await trainer.hasApplied('run-1/step-1')).toBe(false);
    await trainer.loadCheckpoint(checkpoint);
    expect(await trainer.hasApplied('run-1/step-1')).toBe(true);

    const grpo = await trainer.trainStep(
      'run-1/step-2',
      [{ ...sample, reward: 1 }],
      { ...defaultLossConfig, method: 'grpo' },
      defaultOptimizerConfig,
    );
    expect(grpo.duplicate).toBeUndefined();
    expect((await sentCalls()).at(-1)?.datums[0]?.advantages).toEqual([0, 0, 1, 0, 1]);

    const exported = join(dir, 'export', 'v2');
    expect(await trainer.exportForServing(exported)).toBe(exported);
    const sampler = JSON.parse(await readFile(join(exported, 'tinker-sampler.json'), 'utf8')) as {
      model_path: string;
      step_ids: string[];
    };
    expect(sampler.model_path).toMatch(/^tinker:\/\/fake-run\/sampler_weights\//);
    expect(sampler.step_ids).toEqual(['run-1/step-1', 'run-1/step-2']);
  }, 150_000);

  it('refuses a step with a KL coefficient (a reconfigure may set one) instead of training without it', async () => {
    const backend = new TinkerTrainerBackend(sidecar?.url ?? '');
    const loss = { ...defaultLossConfig, method: 'opd' as const, klCoef: 0.1, klType: 'k3' as const };
    await expect(backend.trainStep('kl', [sample], loss, defaultOptimizerConfig)).rejects.toMatchObject({
      type: 'TrainerRefused',
      nonRetryable: true,
    });
    expect(await backend.hasApplied('kl')).toBe(false);
  });
});

describeTrainerBackendContract('tinker (sidecar with the fake Tinker SDK)', async () => {
  const root = await mkdtemp(join(tmpdir(), 'openclaw-tinker-contract-'));
  const sidecar = await startTinkerSidecar({
    baseModel: 'fake/base',
    loraRank: 8,
    sdkModule: 'fake_tinker',
    checkpointRoots: [root],
    env: { PYTHONPATH: fakeSdkDir, FAKE_TINKER_STORE: join(root, 'fake-cloud') },
  });
  return {
    trainer: new TinkerTrainerBackend(sidecar.url),
    dir: root,
    // What a Tinker sampling client is created from: the sampler weights' `tinker://` path.
    async expectServable(path) {
      const sampler = JSON.parse(await readFile(join(path, 'tinker-sampler.json'), 'utf8')) as {
        model_path: string;
        base_model: string;
      };
      expect(sampler.model_path).toMatch(/^tinker:\/\/fake-run\/sampler_weights\//);
      expect(sampler.base_model).toBe('fake/base');
    },
    async close() {
      await sidecar.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
});
