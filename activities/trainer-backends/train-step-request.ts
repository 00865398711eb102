// The `/train_step` request body (engine/TRAINING.md): what the reference engine, the Tinker sidecar and the
// slime epoch's batch file all take, built in one place from the backend-neutral types.
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
    })),
    loss: {
      method: loss.method,
      eps_clip: loss.epsClip,
      eps_clip_high: loss.epsClipHigh,
      kl_coef: loss.klCoef,
      kl_type: loss.klType,
      entropy_coef: loss.entropyCoef,
      w_rl: loss.wRl,
      w_opd: loss.wOpd,
      use_rollout_logprobs: loss.useRolloutLogprobs,
    },
    optimizer: { lr: optimizer.lr, weight_decay: optimizer.weightDecay, betas: optimizer.betas },
  };
}
