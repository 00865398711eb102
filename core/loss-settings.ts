// The loss and optimizer settings: one zod schema each, with the defaults of the original Track 1 scripts.
// The configuration (core/config.ts), the training run's input and reconfigure update (core/training-settings.ts)
// and every trainer backend (activities/trainer-backend.ts) take their types from here. Field names follow
// TypeScript; the few wire formats that name a field otherwise map it in one named function each
// (activities/trainer-backends/train-step-request.ts, slime-arguments.ts). zod is pure: workflows may import this.
import { z } from 'zod';

/** KL estimators a run may name; each is sent to the trainer as named (see `klEstimatorOnWire`). */
export const KL_TYPES = ['low_var_kl', 'k1', 'k2', 'k3'] as const;
export type KlType = (typeof KL_TYPES)[number];

/** The trainer's losses: binary RL is GRPO; `topk_distill` is opd with top-K distillation (spec 6.6). */
export const LOSS_METHODS = ['grpo', 'opd', 'combine', 'topk_distill'] as const;
export type LossMethod = (typeof LOSS_METHODS)[number];

const beta = z.number().min(0).lt(1);

export const lossSettingsSchema = z.strictObject({
  epsClip: z.number().min(0).lt(1).default(0.2),
  epsClipHigh: z.number().min(0).default(0.28),
  klCoef: z.number().min(0).default(0),
  klType: z.enum(KL_TYPES).default('low_var_kl'),
  entropyCoef: z.number().min(0).default(0),
  wRl: z.number().min(0).default(1),
  wOpd: z.number().min(0).default(1),
});

export const optimizerSettingsSchema = z.strictObject({
  learningRate: z.number().positive().default(1e-5),
  weightDecay: z.number().min(0).default(0.1),
  betas: z.tuple([beta, beta]).default([0.9, 0.98]),
});

/** What a trainer backend trains one step with: the run's loss settings, its method and π_old's source. */
export const trainerLossSchema = lossSettingsSchema.extend({
  method: z.enum(LOSS_METHODS),
  /** Every sample's π_old is its rollout log-probs (a sample's own `useRolloutLogprobs` also sets it). */
  useRolloutLogprobs: z.boolean().default(false),
});

export type LossSettings = z.output<typeof lossSettingsSchema>;
export type OptimizerSettings = z.output<typeof optimizerSettingsSchema>;
export type TrainerLoss = z.output<typeof trainerLossSchema>;

/** The KL estimator names the trainers (the engine's `/train_step`, slime's `--kl-loss-type`) receive. */
export type WireKlType = KlType;

/**
 * The estimator a trainer is told to use for a run's `klType`: the same name. Both trainers compute, per token
 * with r = ref − lp: k1 = −r, k2 = r²/2, k3 = exp(r) − r − 1 (unbiased, never negative), and `low_var_kl` = k3
 * clamped to [−10, 10] (engine/openclaw_engine/losses.py `kl_penalty`, which the slime plugin's loss also
 * calls, and slime's own `compute_approx_kl`, whose `--kl-loss-type` takes all four). Until this mapping was
 * the identity a run's `k3` was sent as `low_var_kl`; a run that wants that clamped estimator names
 * `low_var_kl` (the default) — docs/configuration.md says so.
 */
export function klEstimatorOnWire(klType: KlType): WireKlType {
  return klType;
}
