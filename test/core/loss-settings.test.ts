// The loss and optimizer settings: one schema, and the one mapping of each renamed or mapped field onto the
// trainers' wire formats (the engine's `/train_step` body and slime's command line).

import { describe, expect, it } from 'vitest';
import { defaultLossConfig, defaultOptimizerConfig } from '../../activities/trainer-backend.js';
import { slimeArguments } from '../../activities/trainer-backends/slime-arguments.js';
import { trainStepRequest } from '../../activities/trainer-backends/train-step-request.js';
import { loadConfig } from '../../core/config.js';
import { klEstimatorOnWire, lossSettingsSchema, optimizerSettingsSchema } from '../../core/loss-settings.js';
import { trainingSettingsSchema } from '../../core/training-settings.js';

describe('loss and optimizer settings', () => {
  it('the configuration, the run settings and the trainers share the same defaults', () => {
    const config = loadConfig({});
    if (!config.ok) throw new Error(config.error);
    const settings = trainingSettingsSchema.parse({});
    expect(config.config.loss).toEqual(lossSettingsSchema.parse({}));
    expect(settings.loss).toEqual(lossSettingsSchema.parse({}));
    const { learningRate, weightDecay, betas } = config.config.training;
    expect({ learningRate, weightDecay, betas }).toEqual(optimizerSettingsSchema.parse({}));
    expect(settings.optimizer).toEqual(defaultOptimizerConfig);
    const { method: _method, useRolloutLogprobs, ...loss } = defaultLossConfig;
    expect(loss).toEqual(settings.loss);
    expect(useRolloutLogprobs).toBe(false);
  });

  it('a run may name k3, which every trainer is told as low_var_kl (the clamped k3)', () => {
    expect(klEstimatorOnWire('k3')).toBe('low_var_kl');
    expect(klEstimatorOnWire('low_var_kl')).toBe('low_var_kl');
    expect(klEstimatorOnWire('k1')).toBe('k1');
    expect(klEstimatorOnWire('k2')).toBe('k2');
    const loss = { ...defaultLossConfig, method: 'grpo' as const, klType: 'k3' as const };
    expect(trainStepRequest('s', [], loss, defaultOptimizerConfig).loss.kl_type).toBe('low_var_kl');
    const args = slimeArguments({
      hfCheckpoint: '/m',
      load: null,
      save: '/s',
      method: 'grpo',
      loss,
      optimizer: defaultOptimizerConfig,
    });
    expect(args[args.indexOf('--kl-loss-type') + 1]).toBe('low_var_kl');
  });

  it('the learning rate is `lr` on the engine wire, the other fields snake_case', () => {
    const optimizer = { learningRate: 3e-4, weightDecay: 0.05, betas: [0.8, 0.9] as [number, number] };
    expect(trainStepRequest('s', [], defaultLossConfig, optimizer).optimizer).toEqual({
      lr: 3e-4,
      weight_decay: 0.05,
      betas: [0.8, 0.9],
    });
  });
});
