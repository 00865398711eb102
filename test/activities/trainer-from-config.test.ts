// Which trainer backend the configuration builds, and the slime backend's options, without Docker.
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultLossConfig, defaultOptimizerConfig } from '../../activities/trainer-backend.js';
import { FireworksTrainerBackend } from '../../activities/trainer-backends/fireworks-trainer.js';
import { ReferenceTrainerBackend } from '../../activities/trainer-backends/reference-trainer.js';
import { gpuDeviceRequests, SlimeTrainerBackend } from '../../activities/trainer-backends/slime-trainer.js';
import { TinkerTrainerBackend } from '../../activities/trainer-backends/tinker-trainer.js';
import {
  slimeOptionsFromConfig,
  trainerFromConfig,
} from '../../activities/trainer-backends/trainer-from-config.js';
import { loadConfig, type OpenClawConfig } from '../../core/config.js';
import { trainingInputFromConfig } from '../../workers/control-worker.js';

function load(env: Record<string, string>): OpenClawConfig {
  const result = loadConfig(env, { dataDir: '/srv/openclaw' });
  if (!result.ok) throw new Error(result.error);
  return result.config;
}

const slime = {
  OPENCLAW_TRAINER: 'slime',
  OPENCLAW_TRAINER_IMAGE: 'my/slime:1',
  OPENCLAW_MODEL: '/models/q',
};

const epoch = {
  stepId: 'run:v1',
  baseModel: '/models/q',
  batchFile: '/b.json',
  sampleCount: 4,
  checkpointIn: null,
  checkpointOut: '/c',
  loss: defaultLossConfig,
  optimizer: defaultOptimizerConfig,
  temperature: 1,
};

describe('trainerFromConfig', () => {
  it('builds the reference trainer by default, on the engine URL', () => {
    const trainer = trainerFromConfig(load({ OPENCLAW_ENGINE_URL: 'http://engine:30000' }));
    expect(trainer).toBeInstanceOf(ReferenceTrainerBackend);
    expect(trainer.name).toBe('reference');
  });

  it('builds the Tinker trainer on the sidecar URL, the engine URL by default', () => {
    expect(trainerFromConfig(load({ OPENCLAW_TRAINER: 'tinker' }))).toBeInstanceOf(TinkerTrainerBackend);
    expect(
      trainerFromConfig(load({ OPENCLAW_TRAINER: 'tinker', OPENCLAW_TINKER_URL: 'http://sidecar:8001' }))
        .name,
    ).toBe('tinker');
  });

  // An operator switches to Fireworks but leaves a KL coefficient or a top-K teacher set: the config check
  // names the option rather than letting a step drop the term.
  it('builds the Fireworks trainer on its sidecar URL and refuses what Fireworks cannot train', () => {
    const trainer = trainerFromConfig(
      load({ OPENCLAW_TRAINER: 'fireworks', OPENCLAW_FIREWORKS_URL: 'http://fireworks:30000' }),
    );
    expect(trainer).toBeInstanceOf(FireworksTrainerBackend);
    expect(trainer.name).toBe('fireworks');
    const kl = loadConfig({ OPENCLAW_TRAINER: 'fireworks', OPENCLAW_KL_COEF: '0.1' });
    expect(kl.ok ? '' : kl.error).toContain('loss.klCoef');
    const topK = loadConfig({
      OPENCLAW_TRAINER: 'fireworks',
      OPENCLAW_METHOD: 'opd',
      OPENCLAW_TEACHER_TOP_K: '8',
    });
    expect(topK.ok ? '' : topK.error).toMatch(/teacher\.topK .*top-K tokens/);
  });

  it('builds the slime trainer with the configured image, folders, GPUs and arguments', () => {
    const config = load({
      ...slime,
      OPENCLAW_TRAINER_GPUS: '4',
      OPENCLAW_TRAINER_EXTRA_ARGS: '--tensor-model-parallel-size 2  --seed 7',
    });
    expect(trainerFromConfig(config)).toBeInstanceOf(SlimeTrainerBackend);
    const options = slimeOptionsFromConfig(config);
    expect(options).toMatchObject({
      image: 'my/slime:1',
      sharedDir: join('/srv/openclaw', 'trainer'),
      baseModel: '/models/q',
      gpus: 4,
      shmBytes: 16 * 2 ** 30,
      extraArgs: ['--tensor-model-parallel-size', '2', '--seed', '7'],
    });
    const { cmd, env } = options.command?.(epoch) ?? { cmd: [], env: {} };
    expect(cmd.slice(0, 3)).toEqual(['python3', '-m', 'openclaw_engine.slime_plugin.epoch']);
    expect(cmd.join(' ')).toContain('--actor-num-gpus-per-node 4');
    expect(cmd).not.toContain('--use-lora');
    expect(env.OPENCLAW_BATCH_FILE).toBe('/b.json');
  });

  it('pins epoch containers to the listed GPUs', () => {
    const options = slimeOptionsFromConfig(load({ ...slime, OPENCLAW_TRAINER_GPU_IDS: '2,3' }));
    expect(gpuDeviceRequests(options.gpus ?? 0, options.gpuIds)).toEqual([
      { Driver: 'nvidia', DeviceIDs: ['2', '3'], Capabilities: [['gpu']] },
    ]);
    expect(options.command?.(epoch).cmd.join(' ')).toContain('--actor-num-gpus-per-node 2');
    expect(gpuDeviceRequests(2)).toEqual([{ Driver: 'nvidia', Count: 2, Capabilities: [['gpu']] }]);
    expect(gpuDeviceRequests(0)).toBeUndefined();
  });

  it('trains LoRA on slime with alpha twice the rank (spec 8.1: 16 and 32)', () => {
    const options = slimeOptionsFromConfig(load({ ...slime, OPENCLAW_LORA_RANK: '8' }));
    const cmd = options.command?.(epoch).cmd.join(' ') ?? '';
    expect(cmd).toMatch(/--lora-rank 8\b/);
    expect(cmd).toMatch(/--lora-alpha 16\b/);
  });

  it('runs the reference epoch command when asked, with its own shared folder and base', () => {
    const options = slimeOptionsFromConfig(
      load({
        ...slime,
        OPENCLAW_TRAINER_EPOCH_COMMAND: 'reference',
        OPENCLAW_TRAINER_SHARED_DIR: 'shared',
        OPENCLAW_TRAINER_BASE_MODEL: '/models/base',
        OPENCLAW_TRAINER_GPUS: '0',
      }),
    );
    expect(options.sharedDir).toBe(resolve('shared'));
    expect(options.baseModel).toBe('/models/base');
    expect(options.command?.(epoch).cmd.slice(0, 4)).toEqual([
      'python',
      '-m',
      'openclaw_engine',
      'train-epoch',
    ]);
  });

  it('sends training steps to the trainer queue only when one is configured', () => {
    expect(trainingInputFromConfig(load({})).settings).not.toHaveProperty('trainerTaskQueue');
    const input = trainingInputFromConfig(load({ OPENCLAW_TRAINER_TASK_QUEUE: 'trainer' }));
    expect(input.settings?.trainerTaskQueue).toBe('trainer');
  });
});
