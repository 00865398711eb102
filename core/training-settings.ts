// The training run's settings as the workflow sees them: validated with zod when the run starts and on every
// reconfigure update, defaults matching core/config.ts. The loss and optimizer schemas are core/loss-settings.ts,
// shared with the configuration and the trainers. zod is pure, so the workflow bundle may use it.
import { z } from 'zod';
import { lossSettingsSchema, optimizerSettingsSchema } from './loss-settings.js';

/**
 * The publish gate (docs/evaluation.md#publish-gate): a new version is served only if its score on the evaluation
 * set is not below the served version's score minus `threshold`. The set is a path the evaluating activity reads:
 * the workflow carries the reference, never the conversations.
 */
export const gateSettingsSchema = z.strictObject({
  /** A JSONL evaluation set (core/eval-set.ts), read by the trainer's worker at each evaluation. */
  evalSet: z.string().min(1),
  /** `judge` (the run's judge against `next_user`) or `style:<rule>` (core/reply-scorers.ts). */
  scorer: z
    .string()
    .regex(/^(judge|style:[a-z0-9-]+)$/, 'use `judge` or `style:<rule>`')
    .default('judge'),
  threshold: z.number().default(0),
  samples: z.number().int().min(1).max(64).default(4),
  maxTokens: z.number().int().min(1).max(4096).default(64),
});
export type GateSettings = z.output<typeof gateSettingsSchema>;

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
  /** Group training: at most this many samples of one tenant per batch while others wait (absent or 0: no cap). */
  maxSamplesPerTenant: z.number().int().min(0).optional(),
  /** Group training: each tenant's samples' loss weight (a tenant not listed: 1). */
  tenantWeights: z.record(z.string().min(1), z.number().min(0)).optional(),
  loss: lossSettingsSchema.prefault({}),
  optimizer: optimizerSettingsSchema.prefault({}),
  /** Absent: no gate, every trained version is served. */
  gate: gateSettingsSchema.optional(),
});

export const trainingInputSchema = z
  .strictObject({
    // A run id as configured, or a tenant's adapter run `<runId>~<tenant>` (core/tenant-adapters.ts).
    runId: z
      .string()
      .regex(
        /^[A-Za-z0-9._-]{1,64}(~[A-Za-z0-9][A-Za-z0-9._@-]{0,63})?$/,
        'use 1-64 letters, digits, ".", "_" or "-" (and `~<tenant>` for a tenant\'s adapter)',
      ),
    // Every field but runId defaults (docs/configuration.md), so `{"runId": "x"}` starts a run.
    method: z.enum(['rl', 'opd', 'combine']).default('combine'),
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
  maxSamplesPerTenant: z.number().int().min(0).optional(),
  /** Replaces the weights whole. */
  tenantWeights: z.record(z.string().min(1), z.number().min(0)).optional(),
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
