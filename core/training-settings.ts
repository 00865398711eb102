// The training run's settings as the workflow sees them: validated with zod when the run starts and on every
// reconfigure update, defaults matching core/config.ts. zod is pure, so the workflow bundle may use it.
import { z } from 'zod';

const beta = z.number().min(0).lt(1);

export const lossSettingsSchema = z.strictObject({
  epsClip: z.number().min(0).lt(1).default(0.2),
  epsClipHigh: z.number().min(0).default(0.28),
  klCoef: z.number().min(0).default(0),
  klType: z.enum(['low_var_kl', 'k1', 'k2', 'k3']).default('low_var_kl'),
  entropyCoef: z.number().min(0).default(0),
  wRl: z.number().min(0).default(1),
  wOpd: z.number().min(0).default(1),
});

export const optimizerSettingsSchema = z.strictObject({
  learningRate: z.number().positive().default(1e-5),
  weightDecay: z.number().min(0).default(0.1),
  betas: z.tuple([beta, beta]).default([0.9, 0.98]),
});

export const trainingSettingsSchema = z.strictObject({
  batchSize: z.number().int().min(1).max(4096).default(16),
  maxPolicyLag: z.number().int().min(0).default(2),
  stalenessPolicy: z.enum(['drop', 'rollout-logprobs']).default('rollout-logprobs'),
  continueAsNewAfterSteps: z.number().int().min(1).default(50),
  /** History events after which the run continues as new, also while it waits (a run of exclusions). */
  continueAsNewAfterEvents: z.number().int().min(200).max(40_000).default(10_000),
  /** Published versions whose checkpoint folders are kept (the newest); 0 keeps all. Lineage is always kept. */
  keepCheckpoints: z.number().int().min(0).default(3),
  /** opd only: train top-K distillation against the teacher's K best log-probs (spec 6.6); 0: the OPD advantage. */
  distillTopK: z.number().int().min(0).max(1024).default(0),
  heartbeatTimeoutMs: z.number().int().min(500).default(30_000),
  /** Where training steps and publishing run (`openclaw-rl worker trainer`); absent: the run's own queue. */
  trainerTaskQueue: z.string().min(1).optional(),
  loss: lossSettingsSchema.prefault({}),
  optimizer: optimizerSettingsSchema.prefault({}),
});

export const trainingInputSchema = z
  .strictObject({
    runId: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'use 1-64 letters, digits, ".", "_" or "-"'),
    method: z.enum(['rl', 'opd', 'combine']),
    settings: trainingSettingsSchema.prefault({}),
    initialPolicyVersion: z.number().int().min(0).default(0),
    carried: z.unknown().optional(),
  })
  .refine((input) => input.settings.distillTopK === 0 || input.method === 'opd', {
    path: ['settings', 'distillTopK'],
    message: 'top-K distillation is an opd loss: use method "opd" (or distillTopK 0)',
  });

export const reconfigurationSchema = z.strictObject({
  batchSize: z.number().int().min(1).max(4096).optional(),
  maxPolicyLag: z.number().int().min(0).optional(),
  stalenessPolicy: z.enum(['drop', 'rollout-logprobs']).optional(),
  keepCheckpoints: z.number().int().min(0).optional(),
  loss: lossSettingsSchema.partial().strict().optional(),
  optimizer: optimizerSettingsSchema.partial().strict().optional(),
});

export type ResolvedTrainingSettings = z.output<typeof trainingSettingsSchema>;

/** One line naming the first offending field, for a non-retryable failure or a rejected update. */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .slice(0, 3)
    .map((issue) => `${issue.path.length ? issue.path.join('.') : '(input)'}: ${issue.message}`)
    .join('; ');
}
