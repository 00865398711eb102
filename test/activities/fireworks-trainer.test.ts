// Scenario: an operator trains on Fireworks (OPENCLAW_TRAINER=fireworks). Each step must reach Fireworks as the
// exact token ids the policy sampled with the project's loss, a repeated step id must not train twice, a
// restarted sidecar must come back to its checkpoint, and a published export must be what the deployment
// hot-loads. Fireworks' cloud is the DOUBLE (test/support/python/fireworks_cloud_double.py); the sidecar,
// the SDK's types and its WeightSyncer are real.

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defaultLossConfig,
  defaultOptimizerConfig,
  type TrainerSample,
} from '../../activities/trainer-backend.js';
import type { FireworksSidecarProcess } from '../../activities/trainer-backends/fireworks-sidecar-process.js';
import {
  FIREWORKS_SAMPLER_FILE,
  FireworksTrainerBackend,
} from '../../activities/trainer-backends/fireworks-trainer.js';
import { ReferenceAdapter } from '../../engines/reference-adapter.js';
import { describeTrainerBackendContract } from '../contracts/trainer-backend-contract.js';
import {
  FIREWORKS_DOUBLE_BASE_MODEL,
  fireworksDoubleCalls,
  fireworksDoubleServedSnapshot,
  startFireworksSidecarWithDouble,
} from '../support/fireworks-cloud-double.js';

const sample: TrainerSample = {
  tokens: [11, 12, 13, 21, 22, 23],
  responseLength: 3,
  lossMask: [1, 0, 1],
  rolloutLogProbs: [-1, -2, -0.5],
  teacherLogProbs: [-0.25, -1, -1.5],
  reward: -1,
};

// One sidecar process (and one cloud) for the whole file: starting one imports torch and the SDK (seconds).
let dir: string;
let store: string;
let sidecar: FireworksSidecarProcess | undefined;
const start = () => startFireworksSidecarWithDouble(store, [dir]);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'openclaw-fireworks-'));
  store = join(dir, 'cloud');
  sidecar = await start();
}, 90_000);

afterAll(async () => {
  await sidecar?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('Fireworks trainer backend (sidecar with the Fireworks cloud double)', () => {
  // It restarts the sidecar: the second start may take the sidecar's whole ready time (60 s) on a loaded
  // machine, on top of the steps around it.
  it('trains the sampled ids once, survives a restart from its checkpoint, and hot-loads an export', async () => {
    if (!sidecar) throw new Error('the sidecar did not start');
    let trainer = new FireworksTrainerBackend(sidecar.url);
    const loss = { ...defaultLossConfig, method: 'combine' as const, wRl: 2, wOpd: 0.5 };
    const metrics = await trainer.trainStep('fw-run/step-1', [sample], loss, defaultOptimizerConfig);
    expect(metrics.tokens).toBe(2);
    expect(metrics.duplicate).toBeUndefined();
    // π_old is this forward, so the ratio is 1 and the loss is −mean(A) over trained tokens:
    // A = 0.5·(teacher − old) + 2·(−1) with old = log(1/4096) under the double's untrained uniform model.
    const old = Math.log(1 / 4096);
    const expected = -((0.5 * (-0.25 - old) - 2 + 0.5 * (-1.5 - old) - 2) / 2);
    expect(metrics.loss).toBeCloseTo(expected, 4);
    const [sent] = await fireworksDoubleCalls(store, 'forward_backward_custom');
    const datums = (sent?.args[0] ?? []) as {
      model_input: number[];
      target_tokens: number[];
      weights: number[];
    }[];
    const datum = datums[0];
    expect(datum?.model_input).toEqual([11, 12, 13, 21, 22]);
    expect(datum?.target_tokens).toEqual([12, 13, 21, 22, 23]);
    expect(datum?.weights).toEqual([0, 0, 1, 0, 1]);

    const again = await trainer.trainStep('fw-run/step-1', [sample], loss, defaultOptimizerConfig);
    expect(again.duplicate).toBe(true);
    expect(await fireworksDoubleCalls(store, 'forward_backward_custom')).toHaveLength(1);

    const checkpoint = join(dir, 'ckpt', 'v1');
    await trainer.saveCheckpoint(checkpoint);
    await sidecar.stop();
    sidecar = await start();
    trainer = new FireworksTrainerBackend(sidecar.url);
    expect(await trainer.hasApplied('fw-run/step-1')).toBe(false);
    await trainer.loadCheckpoint(checkpoint);
    expect(await trainer.hasApplied('fw-run/step-1')).toBe(true);

    const exported = join(dir, 'export', 'v2');
    expect(await trainer.exportForServing(exported)).toBe(exported);
    const snapshot = JSON.parse(await readFile(join(exported, FIREWORKS_SAMPLER_FILE), 'utf8')) as {
      snapshot_name: string;
    };
    expect(await fireworksDoubleServedSnapshot(store)).toBeUndefined();
    // Publishing: the serving side's `/update_weights_from_disk` hot-loads the snapshot into the deployment.
    await new ReferenceAdapter(sidecar.url).publishWeights({ path: exported, version: '2' });
    expect(await fireworksDoubleServedSnapshot(store)).toBe(snapshot.snapshot_name);
  }, 150_000);

  it('refuses top-K distillation naming the option, instead of training something else', async () => {
    const trainer = new FireworksTrainerBackend(sidecar?.url ?? '');
    const loss = { ...defaultLossConfig, method: 'topk_distill' as const };
    await expect(trainer.trainStep('topk', [sample], loss, defaultOptimizerConfig)).rejects.toMatchObject({
      type: 'TrainerRefused',
      nonRetryable: true,
      message: expect.stringMatching(/teacher\.topK 0/),
    });
    expect(await trainer.hasApplied('topk')).toBe(false);
  });
});

// The same sidecar, reset to its base: the contract's trainer starts with nothing trained.
describeTrainerBackendContract('fireworks (sidecar with the Fireworks cloud double)', async () => {
  if (!sidecar) throw new Error('the sidecar did not start');
  const trainer = new FireworksTrainerBackend(sidecar.url);
  await trainer.resetToBase();
  const root = join(dir, 'contract');
  await mkdir(root);
  return {
    trainer,
    dir: root,
    // What the deployment hot-loads: a sampler snapshot the trainer saved, of this base model.
    async expectServable(path) {
      const sampler = JSON.parse(await readFile(join(path, FIREWORKS_SAMPLER_FILE), 'utf8')) as {
        snapshot_name: string;
        base_model: string;
      };
      expect(sampler.base_model).toBe(FIREWORKS_DOUBLE_BASE_MODEL);
      expect(existsSync(join(store, 'snapshots', `${sampler.snapshot_name}.pt`))).toBe(true);
    },
    async close() {},
  };
});
