// A top-K distillation step whose body is over the engine's request body limit: the engine used to answer 413,
// so the step was refused every time; now it is sent in parts and trained as one step, as if sent whole.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defaultLossConfig,
  defaultOptimizerConfig,
  type TrainerSample,
} from '../../activities/trainer-backend.js';
import { ReferenceTrainerBackend } from '../../activities/trainer-backends/reference-trainer.js';
import { trainStepParts } from '../../activities/trainer-backends/train-step-parts.js';
import { trainStepRequest } from '../../activities/trainer-backends/train-step-request.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';

const K = 16;
const RESPONSE = 24;

/** A sample with a [RESPONSE, K] teacher top-K (K distinct ids per row): about 6 KB of JSON. */
function topkSample(seed: number): TrainerSample {
  const ids = (t: number) => Array.from({ length: K }, (_, k) => 10 + ((seed * 7 + t * 3 + k) % 40));
  return {
    tokens: [5, 6, 7, ...Array.from({ length: RESPONSE }, (_, t) => 10 + ((seed + t) % 40))],
    responseLength: RESPONSE,
    lossMask: Array(RESPONSE).fill(1),
    rolloutLogProbs: Array(RESPONSE).fill(-1.25),
    reward: 0,
    teacherTopkIndices: Array.from({ length: RESPONSE }, (_, t) => ids(t)),
    teacherTopkLogProbs: Array.from({ length: RESPONSE }, (_, t) =>
      Array.from({ length: K }, (_, k) => -0.5 - k * 0.37 - t * 0.01),
    ),
  };
}

const samples = [0, 1, 2, 3, 4].map(topkSample);
const loss = { ...defaultLossConfig, method: 'topk_distill' as const, entropyCoef: 0.01 };
const LIMIT_MB = 0.02; // 20 971 bytes: the step's ~30 KB does not fit, any one sample does

describe('a step over the engine request body limit', () => {
  let dir: string;
  let small: EngineProcess;
  let large: EngineProcess;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'reference-trainer-parts-'));
    const model = await makeTinyModel(join(dir, 'model'));
    [small, large] = await Promise.all([
      startReferenceEngine({ model, trainer: true, maxBodyMb: LIMIT_MB }),
      startReferenceEngine({ model, trainer: true }),
    ]);
  }, 180_000);

  afterAll(async () => {
    await Promise.all([small?.stop(), large?.stop()]);
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('is split into parts under the limit, samples in order', () => {
    const body = trainStepRequest('s', samples, loss, defaultOptimizerConfig);
    const limit = Math.floor(LIMIT_MB * 1024 * 1024);
    expect(Buffer.byteLength(JSON.stringify(body))).toBeGreaterThan(limit);
    const parts = trainStepParts(body, limit);
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) expect(Buffer.byteLength(JSON.stringify(part))).toBeLessThanOrEqual(limit);
    expect(parts.flatMap((p) => p.samples)).toEqual(body.samples);
    expect(parts.map((p) => p.part)).toEqual(parts.map((_, index) => ({ index, count: parts.length })));
    expect(trainStepParts(body, limit * 100)).toEqual([]);
  });

  it('trains as one step, with the metrics of the same step sent whole, and once', async () => {
    const parted = new ReferenceTrainerBackend(small.url);
    const whole = new ReferenceTrainerBackend(large.url);
    const fromParts = await parted.trainStep('run:1', samples, loss, defaultOptimizerConfig);
    const fromWhole = await whole.trainStep('run:1', samples, loss, defaultOptimizerConfig);
    expect(fromParts.duplicate).toBe(false);
    expect(fromParts).toMatchObject({ samples: samples.length, step: 1 });
    for (const key of ['loss', 'pg_loss', 'entropy', 'grad_norm', 'tokens'])
      expect(fromParts[key]).toBeCloseTo(fromWhole[key] as number, 6);
    expect(await parted.hasApplied('run:1')).toBe(true);
    const again = await parted.trainStep('run:1', samples, loss, defaultOptimizerConfig);
    expect(again.duplicate).toBe(true);
  }, 120_000);

  it('refuses a single sample larger than the limit, naming the setting to change', async () => {
    const huge = { ...topkSample(9), rolloutLogProbs: Array(RESPONSE).fill(-1.2345678901234567) };
    huge.tokens = [...Array(6000).fill(40), ...huge.tokens]; // refused here: never sent
    await expect(
      new ReferenceTrainerBackend(small.url).trainStep('run:2', [huge], loss, defaultOptimizerConfig),
    ).rejects.toMatchObject({ type: 'TrainerRefused', message: expect.stringContaining('--max-body-mb') });
  });
});
