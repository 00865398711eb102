import { ApplicationFailure } from '@temporalio/activity';
import { describe, expect, it } from 'vitest';
import {
  defaultLossConfig,
  defaultOptimizerConfig,
  type TrainerSample,
} from '../../activities/trainer-backend.js';
import { SlimeTrainerBackend } from '../../activities/trainer-backends/slime-trainer.js';
import { TinkerTrainerBackend } from '../../activities/trainer-backends/tinker-trainer.js';
import { trainStepRequest } from '../../activities/trainer-backends/train-step-request.js';
import { asTrainerRefusal } from '../../activities/trainer-refusal.js';
import { TRAINER_REFUSED } from '../../activities/training-errors.js';
import { loadConfig } from '../../core/config.js';

// Group training's per-tenant loss weights on their way to the trainers.
const sample: TrainerSample = {
  tokens: [11, 12, 13, 21, 22],
  responseLength: 2,
  lossMask: [1, 1],
  rolloutLogProbs: [-1, -2],
  reward: 1,
};

const loss: Parameters<typeof trainStepRequest>[2] = { ...defaultLossConfig, method: 'grpo' };

describe('sample weights', () => {
  it('are sent as `weight` on each weighted sample, and left out at 1', () => {
    const body = trainStepRequest(
      's',
      [sample, { ...sample, weight: 0.5 }, { ...sample, weight: 1 }, { ...sample, weight: 0 }],
      loss,
      defaultOptimizerConfig,
    );
    expect(body.samples.map((s) => (s as { weight?: number }).weight)).toEqual([
      undefined,
      0.5,
      undefined,
      0,
    ]);
    expect('weight' in (body.samples[0] ?? {})).toBe(false);
  });

  it('are refused by Tinker and slime, naming the option, before anything is sent', async () => {
    const tinker = new TinkerTrainerBackend('http://127.0.0.1:9');
    const slime = new SlimeTrainerBackend({ image: 'unused', sharedDir: '/nonexistent', baseModel: '/none' });
    for (const trainer of [tinker, slime]) {
      const error = await trainer
        .trainStep('s', [sample, { ...sample, weight: 2 }], loss, defaultOptimizerConfig)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApplicationFailure);
      expect((error as ApplicationFailure).type).toBe(TRAINER_REFUSED);
      expect((error as ApplicationFailure).nonRetryable).toBe(true);
      expect((error as Error).message).toContain('training.tenantWeights (OPENCLAW_TENANT_WEIGHTS)');
      // The weighted samples are named, so a run excludes only them.
      expect(asTrainerRefusal(error, ['a', 'b'])).toMatchObject({ details: [{ refusedSampleIds: ['b'] }] });
    }
  });

  it('other than 1 are a configuration error with the Tinker or slime trainer', () => {
    const tinker = loadConfig({ OPENCLAW_TRAINER: 'tinker', OPENCLAW_TENANT_WEIGHTS: 'alice=2' });
    expect(tinker.ok ? '' : tinker.error).toContain('training.tenantWeights (OPENCLAW_TENANT_WEIGHTS)');
    expect(loadConfig({ OPENCLAW_TRAINER: 'tinker', OPENCLAW_TENANT_WEIGHTS: 'alice=1' }).ok).toBe(true);
  });
});
