// The `/train_step` request body (engine/TRAINING.md): what the reference engine, the Tinker sidecar and the
// slime epoch's batch file all take, built in one place from the backend-neutral types. The field names and
// values sent are fixed by the engine's schema (engine/openclaw_engine/training_schemas.py).
import { klEstimatorOnWire } from '../../core/loss-settings.js';
import type { LossConfig, OptimizerConfig, TrainerSample } from '../trainer-backend.js';

export function trainStepRequest(
  stepId: string,
  samples: TrainerSample[],
  loss: LossConfig,
  optimizer: OptimizerConfig,
) {
  return {
    step_id: stepId,
    samples: samples.map((s) => ({
      tokens: s.tokens,
      response_length: s.responseLength,
      loss_mask: s.lossMask,
      rollout_log_probs: s.rolloutLogProbs,
      reward: s.reward,
      teacher_log_probs: s.teacherLogProbs,
      teacher_topk_log_probs: s.teacherTopkLogProbs,
      teacher_topk_indices: s.teacherTopkIndices,
      ...(s.temperature !== undefined && s.temperature !== 1 && { temperature: s.temperature }),
      ...(s.useRolloutLogprobs !== undefined && { use_rollout_logprobs: s.useRolloutLogprobs }),
      // The engine's default is 1.0: sent only when group training weighs the sample's tenant otherwise.
      ...(s.weight !== undefined && s.weight !== 1 && { weight: s.weight }),
      // A vision-language policy's sample: the images' bytes, in prompt order (the tokens hold their pads).
      ...(s.images !== undefined &&
        s.images.length > 0 && { images: s.images.map((i) => ({ media_type: i.mediaType, data: i.data })) }),
    })),
    loss: lossOnWire(loss),
    optimizer: optimizerOnWire(optimizer),
  };
}

/**
 * The loss settings as `/train_step` names them: snake_case, and the KL estimator the engine is told to use
 * (`klEstimatorOnWire`: each estimator as the run names it).
 */
export function lossOnWire(loss: LossConfig) {
  return {
    method: loss.method,
    eps_clip: loss.epsClip,
    eps_clip_high: loss.epsClipHigh,
    kl_coef: loss.klCoef,
    kl_type: klEstimatorOnWire(loss.klType),
    entropy_coef: loss.entropyCoef,
    w_rl: loss.wRl,
    w_opd: loss.wOpd,
    use_rollout_logprobs: loss.useRolloutLogprobs,
  };
}

/** The optimizer settings as `/train_step` names them: `learningRate` is `lr`, as in torch's Adam. */
export function optimizerOnWire(optimizer: OptimizerConfig) {
  return { lr: optimizer.learningRate, weight_decay: optimizer.weightDecay, betas: optimizer.betas };
}
