// slime's command line against the values the spec records (shared/reference/openclaw-rl-spec.md).

import { describe, expect, it } from 'vitest';
import {
  defaultLossConfig,
  defaultOptimizerConfig,
  type TrainerSample,
} from '../../activities/trainer-backend.js';
import {
  SLIME_BATCH_FILE_ENV,
  SLIME_PLUGIN,
  type SlimeSettings,
  SPEC_LORA,
  slimeArguments,
  slimeEnvironment,
} from '../../activities/trainer-backends/slime-arguments.js';
import { slimeEpochCommand } from '../../activities/trainer-backends/slime-epoch-command.js';
import { oldPolicySource } from '../../activities/trainer-backends/slime-trainer.js';
import { trainStepRequest } from '../../activities/trainer-backends/train-step-request.js';

const base: SlimeSettings = {
  hfCheckpoint: '/models/Qwen3-4B',
  load: null,
  save: '/ckpt/checkpoints/step-1',
  method: 'grpo',
  loss: { ...defaultLossConfig, method: 'grpo' },
  optimizer: defaultOptimizerConfig,
};

/** The value following `flag` (or true for a bare flag, undefined when absent); last occurrence wins, as argparse. */
function flag(args: string[], name: string): string | boolean | undefined {
  const at = args.lastIndexOf(name);
  if (at < 0) return undefined;
  const next = args[at + 1];
  return next === undefined || next.startsWith('--') ? true : next;
}

describe('slimeArguments', () => {
  it('spec 5: GRPO uses the grpo estimator with raw rewards, KL 0 low_var_kl, entropy 0, clip 0.2/0.28', () => {
    const args = slimeArguments(base);
    expect(flag(args, '--advantage-estimator')).toBe('grpo');
    expect(flag(args, '--disable-rewards-normalization')).toBe(true);
    expect(flag(args, '--use-kl-loss')).toBe(true);
    expect(flag(args, '--kl-loss-coef')).toBe('0');
    expect(flag(args, '--kl-loss-type')).toBe('low_var_kl');
    expect(flag(args, '--entropy-coef')).toBe('0');
    expect(flag(args, '--eps-clip')).toBe('0.2');
    expect(flag(args, '--eps-clip-high')).toBe('0.28');
    expect(flag(args, '--loss-type')).toBeUndefined();
    expect(flag(args, '--use-rollout-logprobs')).toBeUndefined();
  });

  it('spec 5: batch of 16, one sample per prompt, one optimizer step per rollout, reward key score', () => {
    const args = slimeArguments(base);
    expect(flag(args, '--rollout-batch-size')).toBe('16');
    expect(flag(args, '--n-samples-per-prompt')).toBe('1');
    expect(flag(args, '--num-steps-per-rollout')).toBe('1');
    expect(flag(args, '--reward-key')).toBe('score');
    expect(flag(args, '--use-dynamic-batch-size')).toBe(true);
    expect(flag(args, '--max-tokens-per-gpu')).toBe('32768');
  });

  it('spec 5: Adam lr 1e-5 constant, weight decay 0.1, betas (0.9, 0.98)', () => {
    const args = slimeArguments(base);
    expect(flag(args, '--optimizer')).toBe('adam');
    expect(flag(args, '--lr')).toBe('0.00001');
    expect(Number(flag(args, '--lr'))).toBe(1e-5);
    expect(flag(args, '--lr-decay-style')).toBe('constant');
    expect(flag(args, '--weight-decay')).toBe('0.1');
    expect(flag(args, '--adam-beta1')).toBe('0.9');
    expect(flag(args, '--adam-beta2')).toBe('0.98');
  });

  it('spec 6.5: OPD uses the on_policy_distillation estimator and no custom loss', () => {
    const args = slimeArguments({ ...base, method: 'opd', loss: { ...base.loss, method: 'opd' } });
    expect(flag(args, '--advantage-estimator')).toBe('on_policy_distillation');
    expect(flag(args, '--disable-rewards-normalization')).toBeUndefined();
    expect(flag(args, '--custom-loss-function-path')).toBeUndefined();
  });

  it("spec 7: combine is grpo without reward normalisation plus the project's custom combine loss", () => {
    const settings: SlimeSettings = {
      ...base,
      method: 'combine',
      loss: { ...base.loss, method: 'combine', wOpd: 0.5, wRl: 2 },
    };
    const args = slimeArguments(settings);
    expect(flag(args, '--advantage-estimator')).toBe('grpo');
    expect(flag(args, '--disable-rewards-normalization')).toBe(true);
    expect(flag(args, '--loss-type')).toBe('custom_loss');
    expect(flag(args, '--custom-loss-function-path')).toBe(SLIME_PLUGIN.combineLoss);
    expect(SLIME_PLUGIN.combineLoss).toBe('openclaw_engine.slime_plugin.loss.combine_loss_function');
    // spec 7: w_opd / w_rl are read from the environment per call.
    expect(slimeEnvironment(settings, '/ckpt/batches/b.json')).toEqual({
      [SLIME_BATCH_FILE_ENV]: '/ckpt/batches/b.json',
      OPENCLAW_COMBINE_W_OPD: '0.5',
      OPENCLAW_COMBINE_W_RL: '2',
    });
  });

  it('spec 6.6: top-K distillation uses the custom top-K loss, K=50, no advantages', () => {
    const args = slimeArguments({
      ...base,
      method: 'topk_distill',
      loss: { ...base.loss, method: 'topk_distill' },
    });
    expect(flag(args, '--loss-type')).toBe('custom_loss');
    expect(flag(args, '--custom-loss-function-path')).toBe(SLIME_PLUGIN.topkDistillationLoss);
    expect(flag(args, '--distill-topk')).toBe('50');
    expect(flag(args, '--disable-compute-advantages-and-returns')).toBe(true);
    expect(flag(args, '--disable-rewards-normalization')).toBe(true);
    expect(flag(args, '--advantage-estimator')).toBeUndefined();
  });

  it('spec 8.1: LoRA trains on the FSDP backend with rank 16, alpha 32, seven target modules, 8192 tokens/GPU', () => {
    const args = slimeArguments({ ...base, lora: SPEC_LORA });
    expect(flag(args, '--train-backend')).toBe('fsdp');
    expect(flag(args, '--use-lora')).toBe(true);
    expect(flag(args, '--lora-rank')).toBe('16');
    expect(flag(args, '--lora-alpha')).toBe('32');
    expect(flag(args, '--lora-target-modules')).toBe(
      'q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj',
    );
    expect(flag(args, '--gradient-checkpointing')).toBe(true);
    expect(flag(args, '--max-tokens-per-gpu')).toBe('8192');
    // Without LoRA: slime's default (Megatron) backend, no LoRA flags.
    const full = slimeArguments(base);
    expect(flag(full, '--train-backend')).toBeUndefined();
    expect(flag(full, '--use-lora')).toBeUndefined();
  });

  it('spec 12: resumes with --load from the last checkpoint (the original restarts from the base), saves each epoch', () => {
    const first = slimeArguments(base);
    expect(flag(first, '--hf-checkpoint')).toBe('/models/Qwen3-4B');
    expect(flag(first, '--ref-load')).toBe('/models/Qwen3-4B');
    expect(flag(first, '--load')).toBeUndefined();
    expect(flag(first, '--save')).toBe('/ckpt/checkpoints/step-1');
    expect(flag(first, '--save-interval')).toBe('1');
    const next = slimeArguments({
      ...base,
      load: '/ckpt/checkpoints/step-1',
      save: '/ckpt/checkpoints/step-2',
    });
    expect(flag(next, '--load')).toBe('/ckpt/checkpoints/step-1');
    expect(flag(next, '--save')).toBe('/ckpt/checkpoints/step-2');
  });

  it('spec 2: one epoch is one rollout read from the batch file by the plugin, then one train call', () => {
    const args = slimeArguments(base);
    expect(flag(args, '--num-rollout')).toBe('1');
    expect(flag(args, '--rollout-function-path')).toBe(SLIME_PLUGIN.batchRollout);
    expect(flag(args, '--debug-train-only')).toBe(true);
  });

  it('passes use_rollout_logprobs, the loss settings of the run, and extra arguments last', () => {
    const args = slimeArguments({
      ...base,
      loss: {
        ...base.loss,
        useRolloutLogprobs: true,
        klCoef: 0.02,
        klType: 'k2',
        epsClip: 0.1,
        epsClipHigh: 0.3,
      },
      optimizer: { learningRate: 1e-6, weightDecay: 0, betas: [0.9, 0.95] },
      extraArgs: ['--max-tokens-per-gpu', '4096'],
    });
    expect(flag(args, '--use-rollout-logprobs')).toBe(true);
    expect(flag(args, '--kl-loss-coef')).toBe('0.02');
    expect(flag(args, '--kl-loss-type')).toBe('k2');
    expect(flag(args, '--eps-clip')).toBe('0.1');
    expect(flag(args, '--eps-clip-high')).toBe('0.3');
    expect(flag(args, '--lr')).toBe('0.000001');
    expect(flag(args, '--adam-beta2')).toBe('0.95');
    expect(flag(args, '--max-tokens-per-gpu')).toBe('4096');
  });

  it('the slime epoch command wires the epoch files and the step method into the arguments', () => {
    const command = slimeEpochCommand({ lora: SPEC_LORA })({
      stepId: 'run:7',
      baseModel: '/models/base',
      batchFile: '/ckpt/batches/run_7.json',
      sampleCount: 5,
      checkpointIn: '/ckpt/checkpoints/run_6',
      checkpointOut: '/ckpt/checkpoints/run_7',
      loss: { ...defaultLossConfig, method: 'opd' },
      optimizer: defaultOptimizerConfig,
      temperature: 0.6,
    });
    expect(command.cmd.slice(0, 6)).toEqual([
      'python3',
      '-m',
      'openclaw_engine.slime_plugin.epoch',
      '--step-id',
      'run:7',
      '--',
    ]);
    expect(flag(command.cmd, '--load')).toBe('/ckpt/checkpoints/run_6');
    expect(flag(command.cmd, '--save')).toBe('/ckpt/checkpoints/run_7');
    expect(flag(command.cmd, '--advantage-estimator')).toBe('on_policy_distillation');
    expect(flag(command.cmd, '--train-backend')).toBe('fsdp');
    expect(flag(command.cmd, '--rollout-batch-size')).toBe('5');
    // slime divides the logits by the temperature the batch was drawn at for every log-prob it computes.
    expect(flag(command.cmd, '--rollout-temperature')).toBe('0.6');
    expect(command.env[SLIME_BATCH_FILE_ENV]).toBe('/ckpt/batches/run_7.json');
    // No images, no multimodal keys; a batch with images names slime's key for them.
    expect(flag(command.cmd, '--multimodal-keys')).toBeUndefined();
    expect(flag(slimeArguments({ ...base, images: true }), '--multimodal-keys')).toBe('{"image":"images"}');
  });

  it('a batch with one stale sample of three: only that sample takes its rollout log-probs as π_old', () => {
    // slime's --use-rollout-logprobs used to be set for the whole batch as soon as one sample was stale.
    const sample = (tokens: number[], stale?: boolean): TrainerSample => ({
      tokens,
      responseLength: 1,
      lossMask: [1],
      rolloutLogProbs: [-1],
      reward: 1,
      ...(stale !== undefined && { useRolloutLogprobs: stale }),
    });
    const samples = [sample([1, 2]), sample([3, 4], true), sample([5, 6])];
    const noRollout = { useRolloutLogprobs: false };
    expect(oldPolicySource(samples, noRollout)).toBe('per-sample');
    expect(oldPolicySource([sample([1, 2], true)], noRollout)).toBe('rollout');
    expect(oldPolicySource([sample([1, 2])], noRollout)).toBe('recomputed');
    expect(oldPolicySource([sample([1, 2], false)], { useRolloutLogprobs: true })).toBe('recomputed');

    for (const method of ['grpo', 'opd', 'combine'] as const) {
      const loss = { ...defaultLossConfig, method };
      const body = trainStepRequest('run:8', samples, loss, defaultOptimizerConfig);
      expect(body.samples.map((s) => s.use_rollout_logprobs)).toEqual([undefined, true, undefined]);
      expect(body.loss.use_rollout_logprobs).toBe(false);
      const command = slimeEpochCommand()({
        stepId: 'run:8',
        baseModel: '/models/base',
        batchFile: '/ckpt/batches/run_8.json',
        sampleCount: 3,
        checkpointIn: null,
        checkpointOut: '/ckpt/checkpoints/run_8',
        loss: { ...loss, useRolloutLogprobs: false },
        optimizer: defaultOptimizerConfig,
        temperature: 1,
        perSampleOldPolicy: true,
      });
      expect(flag(command.cmd, '--use-rollout-logprobs')).toBeUndefined();
      expect(flag(command.cmd, '--loss-type')).toBe('custom_loss');
      const plugin = {
        grpo: SLIME_PLUGIN.grpoLoss,
        opd: SLIME_PLUGIN.opdLoss,
        combine: SLIME_PLUGIN.combineLoss,
      };
      expect(flag(command.cmd, '--custom-loss-function-path')).toBe(plugin[method]);
      // The plugin's loss reads each sample's flag from the batch file it is told of.
      expect(command.env[SLIME_BATCH_FILE_ENV]).toBe('/ckpt/batches/run_8.json');
    }
    const spec = slimeArguments(base);
    expect(flag(spec, '--loss-type')).toBeUndefined();
  });
});
