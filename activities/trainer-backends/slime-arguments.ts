/**
 * slime's command line for one training epoch, built from the run's loss and optimizer settings. Every value
 * and flag comes from the OpenClaw-RL scripts as the spec records them (shared/reference/openclaw-rl-spec.md,
 * sections cited inline); the tests check them section by section. Each setting maps onto its flag here, and only
 * here. Pure: no I/O.
 */

import { klEstimatorOnWire, type LossMethod } from '../../core/loss-settings.js';
import type { LossConfig, OptimizerConfig } from '../trainer-backend.js';

/** The project's slime plugin (engine/openclaw_engine/slime_plugin), importable inside the slime image. */
export const SLIME_PLUGIN = {
  grpoLoss: 'openclaw_engine.slime_plugin.loss.grpo_loss_function',
  opdLoss: 'openclaw_engine.slime_plugin.loss.opd_loss_function',
  combineLoss: 'openclaw_engine.slime_plugin.loss.combine_loss_function',
  topkDistillationLoss: 'openclaw_engine.slime_plugin.loss.topk_distillation_loss_function',
  batchRollout: 'openclaw_engine.slime_plugin.batch_loader.generate_rollout_from_batch_file',
} as const;

/** Environment variable through which the batch loader finds the epoch's batch file. */
export const SLIME_BATCH_FILE_ENV = 'OPENCLAW_BATCH_FILE';

export interface SlimeLoraSettings {
  rank: number;
  alpha: number;
  targetModules: string[];
}

export interface SlimeSettings {
  /** Base Hugging Face model folder (`--hf-checkpoint`, also the frozen KL reference). */
  hfCheckpoint: string;
  /** slime checkpoint folder to resume from, or null for the first epoch (base weights). */
  load: string | null;
  /** Where slime saves this epoch's checkpoint. */
  save: string;
  method: LossMethod;
  loss: LossConfig;
  optimizer: OptimizerConfig;
  /** Samples per optimizer step; spec 5: 16 (one group per sample, one step per rollout). */
  rolloutBatchSize?: number;
  /** spec 5: 32768 with Megatron; spec 8.1: 8192 with LoRA on FSDP. */
  maxTokensPerGpu?: number;
  /** Top-K of the teacher's distribution for `topk_distill` (spec 6.6: 50). */
  distillTopk?: number;
  /**
   * The temperature the batch was drawn at: slime divides the logits by it for every log-prob it computes
   * (π_θ, π_old, the reference), as the engine did for the rollout log-probs. Default 1.
   */
  rolloutTemperature?: number;
  /**
   * The batch mixes stale samples (π_old = their rollout log-probs) with fresh ones (π_old recomputed), which
   * slime's one `--use-rollout-logprobs` switch cannot express: grpo and opd then train with the plugin's
   * losses, which take each sample's π_old as the batch file flags it (combine's loss always does).
   */
  perSampleOldPolicy?: boolean;
  /**
   * Some samples carry images: slime then keeps each sample's `multimodal_train_inputs` (pixel values and
   * grids, which the plugin's batch loader makes from the images) in the training data.
   */
  images?: boolean;
  /** LoRA on slime's FSDP backend (spec 8.1); without it the Megatron backend trains all weights. */
  lora?: SlimeLoraSettings;
  actorGpus?: number;
  /** Appended last, so they override anything above (slime's argparse keeps the last value). */
  extraArgs?: string[];
}

/** spec 8.1: rank 16, alpha 32, the seven projection matrices. */
export const SPEC_LORA: SlimeLoraSettings = {
  rank: 16,
  alpha: 32,
  targetModules: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
};

/** The plugin's loss in place of slime's built-in one (same formula, π_old per sample). */
function perSampleLoss(settings: SlimeSettings, path: string): string[] {
  return settings.perSampleOldPolicy
    ? ['--loss-type', 'custom_loss', '--custom-loss-function-path', path]
    : [];
}

function methodArguments(settings: SlimeSettings): string[] {
  switch (settings.method) {
    // spec 5: rewards used raw (every sample is its own group, so normalising would zero them).
    case 'grpo':
      return [
        '--advantage-estimator',
        'grpo',
        '--disable-rewards-normalization',
        ...perSampleLoss(settings, SLIME_PLUGIN.grpoLoss),
      ];
    // spec 6.5: A_t = teacher_lp − old_lp, computed by slime's own estimator (or per sample by the plugin).
    case 'opd':
      return [
        '--advantage-estimator',
        'on_policy_distillation',
        ...perSampleLoss(settings, SLIME_PLUGIN.opdLoss),
      ];
    // spec 7: slime broadcasts the reward (grpo, unnormalised); the custom loss adds the teacher term.
    case 'combine':
      return [
        '--advantage-estimator',
        'grpo',
        '--disable-rewards-normalization',
        '--loss-type',
        'custom_loss',
        '--custom-loss-function-path',
        SLIME_PLUGIN.combineLoss,
      ];
    // spec 6.6: no advantages; --disable-rewards-normalization avoids the constant-group drop it describes.
    case 'topk_distill':
      return [
        '--loss-type',
        'custom_loss',
        '--custom-loss-function-path',
        SLIME_PLUGIN.topkDistillationLoss,
        '--distill-topk',
        String(settings.distillTopk ?? 50),
        '--disable-compute-advantages-and-returns',
        '--disable-rewards-normalization',
      ];
  }
}

/** Arguments of slime's `train_async.py` for one epoch (one rollout, one optimizer step). */
export function slimeArguments(settings: SlimeSettings): string[] {
  const { loss, optimizer, lora } = settings;
  const args: string[] = [
    // Model and checkpoints (spec 12: pass --load, so a restart resumes the trained weights, not the base).
    '--hf-checkpoint',
    settings.hfCheckpoint,
    '--ref-load',
    settings.hfCheckpoint,
    ...(settings.load ? ['--load', settings.load] : []),
    '--save',
    settings.save,
    '--save-interval',
    '1',
    // One epoch = one rollout read from the batch file = one optimizer step (spec 2, 5).
    '--num-rollout',
    '1',
    '--rollout-function-path',
    SLIME_PLUGIN.batchRollout,
    '--debug-train-only',
    '--rollout-batch-size',
    String(settings.rolloutBatchSize ?? 16),
    '--n-samples-per-prompt',
    '1',
    '--num-steps-per-rollout',
    '1',
    '--reward-key',
    'score',
    '--rollout-temperature',
    String(settings.rolloutTemperature ?? 1),
    // slime's key for a sample's images (`--multimodal-keys`, as its VLM recipes pass it).
    ...(settings.images ? ['--multimodal-keys', JSON.stringify({ image: 'images' })] : []),
    ...methodArguments(settings),
    // Loss (spec 5, 7): KL term present with its coefficient (0.0 in every Track-1 script), PPO clip.
    '--use-kl-loss',
    '--kl-loss-coef',
    String(loss.klCoef),
    '--kl-loss-type',
    klEstimatorOnWire(loss.klType), // slime's --kl-loss-type takes k1, k2, k3 and low_var_kl

    '--entropy-coef',
    String(loss.entropyCoef),
    '--eps-clip',
    String(loss.epsClip),
    '--eps-clip-high',
    String(loss.epsClipHigh),
    ...(loss.useRolloutLogprobs ? ['--use-rollout-logprobs'] : []),
    // Optimizer (spec 5): Adam, constant lr, decoupled weight decay, betas (0.9, 0.98).
    '--optimizer',
    'adam',
    '--lr',
    String(optimizer.learningRate),
    '--lr-decay-style',
    'constant',
    '--weight-decay',
    String(optimizer.weightDecay),
    '--adam-beta1',
    String(optimizer.betas[0]),
    '--adam-beta2',
    String(optimizer.betas[1]),
    '--use-dynamic-batch-size',
    '--max-tokens-per-gpu',
    String(settings.maxTokensPerGpu ?? (lora ? 8192 : 32768)),
    '--actor-num-nodes',
    '1',
    '--actor-num-gpus-per-node',
    String(settings.actorGpus ?? 1),
  ];
  if (lora) {
    // spec 8.1: LoRA exists only on the FSDP backend.
    args.push(
      '--train-backend',
      'fsdp',
      '--use-lora',
      '--lora-rank',
      String(lora.rank),
      '--lora-alpha',
      String(lora.alpha),
      '--lora-target-modules',
      lora.targetModules.join(','),
      '--gradient-checkpointing',
    );
  }
  return [...args, ...(settings.extraArgs ?? [])];
}

/** Environment of the slime process: the batch file, and combine's weights (spec 7 reads them from env). */
export function slimeEnvironment(settings: SlimeSettings, batchFile: string): Record<string, string> {
  return {
    [SLIME_BATCH_FILE_ENV]: batchFile,
    OPENCLAW_COMBINE_W_OPD: String(settings.loss.wOpd),
    OPENCLAW_COMBINE_W_RL: String(settings.loss.wRl),
  };
}
