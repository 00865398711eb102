// The loss and optimizer settings: one schema, and the one mapping of each renamed or mapped field onto the
// trainers' wire formats (the engine's `/train_step` body and slime's command line).

import { describe, expect, it } from 'vitest';
import { defaultLossConfig, defaultOptimizerConfig } from '../../activities/trainer-backend.js';
import { slimeArguments } from '../../activities/trainer-backends/slime-arguments.js';
import { trainStepRequest } from '../../activities/trainer-backends/train-step-request.js';
import { loadConfig } from '../../core/config.js';
import {
  KL_TYPES,
  klEstimatorOnWire,
  lossSettingsSchema,
  optimizerSettingsSchema,
} from '../../core/loss-settings.js';
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

  it('a run that names k3 trains the unclamped k3 (it used to be sent as low_var_kl, the clamped one)', () => {
    for (const klType of KL_TYPES) {
      expect(klEstimatorOnWire(klType)).toBe(klType);
      const loss = { ...defaultLossConfig, method: 'grpo' as const, klType };
      expect(trainStepRequest('s', [], loss, defaultOptimizerConfig).loss.kl_type).toBe(klType);
      const args = slimeArguments({
        hfCheckpoint: '/m',
        load: null,
        save: '/s',
        method: 'grpo',
        loss,
        optimizer: defaultOptimizerConfig,
      });
      expect(args[args.indexOf('--kl-loss-type') + 1]).toBe(klType);
    }
    expect(lossSettingsSchema.parse({ klType: 'low_var_kl' }).klType).toBe('low_var_kl');
    expect(lossSettingsSchema.parse({}).klType).toBe('low_var_kl');
  });

  it('a Tinker configuration with a KL coefficient is refused: Tinker trains no KL term', () => {
    const result = loadConfig({ OPENCLAW_TRAINER: 'tinker', OPENCLAW_KL_COEF: '0.1' });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toContain('Tinker trainer trains no KL term');
    expect(loadConfig({ OPENCLAW_TRAINER: 'tinker', OPENCLAW_KL_TYPE: 'k3' }).ok).toBe(true);
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
