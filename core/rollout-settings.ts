// Start inputs of the Track 2 workflows, validated with zod when a workflow starts (a bad input fails it at
// once, non-retryably) and by the CLI before it sends one. Defaults follow the original's terminal agent
// (spec 10.1: 10 model turns, 3 parse errors, head/tail truncation) unless a comment says otherwise. zod is
// pure, so the workflow bundle may use it.
import { z } from 'zod';
import { ENGINE_KINDS } from './engine-kinds.js';
import { lossSettingsSchema, optimizerSettingsSchema } from './loss-settings.js';
import { CONTROL_TASK_QUEUE, ENV_TASK_QUEUE } from './task-queue-names.js';

const httpUrl = z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' });
const safeId = (max: number) =>
  z.string().regex(new RegExp(`^[A-Za-z0-9._-]{1,${max}}$`), `use 1-${max} letters, digits, ".", "_" or "-"`);

export const samplingSchema = z.strictObject({
  temperature: z.number().min(0).max(100).default(1),
  topP: z.number().gt(0).max(1).default(1),
  maxNewTokens: z.number().int().min(1).default(1024),
  /** Per-step seeds derive from this and the step's sample id, so a retried step samples the same tokens. */
  seed: z.number().int().min(0).default(0),
});

export const policySchema = z.strictObject({
  /** The engine's base URL (engine mode) or the gateway's (gateway mode), without `/v1`. */
  url: httpUrl,
  model: z.string().min(1).optional(),
  /**
   * engine: tokenise with the engine's chat template, truncate exactly, generate from token ids.
   * gateway: send messages through the gateway as side turns (never trained as Track 1 turns).
   * chat: a plain OpenAI-compatible endpoint (`/v1/chat/completions`, text only): evaluated, never trained.
   */
  mode: z.enum(['engine', 'gateway', 'chat']).default('engine'),
  /** engine mode: which engine serves at `url` (its adapter speaks that engine's contract). */
  engine: z.enum(ENGINE_KINDS).default('reference'),
  sampling: samplingSchema.prefault({}),
  /** One policy call, including its retries inside the activity's start-to-close. */
  timeoutMs: z.number().int().min(1_000).default(600_000),
});

export const stepJudgeSchema = z.strictObject({
  /** Judge calls per step (m). */
  votes: z.number().int().min(1).max(16).default(1),
  /** Weight of the step score next to the outcome reward. */
  coef: z.number().min(0).default(1),
  /**
   * step: the Track 2 step judge (the task, the earlier steps and the step with its tool results; spec 10);
   * turn: Track 1's binary judge (the step's reply and what answered it only).
   */
  prompt: z.enum(['step', 'turn']).default('step'),
  /** mean: the mean of the valid ±1 votes, 0 without one (spec 10); majority: +1/0/-1 as in Track 1. */
  aggregate: z.enum(['mean', 'majority']).default('mean'),
  /** Earlier steps the step prompt shows (the most recent ones). */
  historySteps: z.number().int().min(0).max(64).default(8),
});

/** How one rollout runs; shared by a single rollout and by every rollout of a training step. */
export const rolloutSettingsShape = {
  maxTurns: z.number().int().min(1).max(500).default(10),
  maxParseErrors: z.number().int().min(1).max(100).default(3),
  /** Prompt plus new tokens must fit this; longer prompts keep head 30% + marker + tail. */
  contextBudgetTokens: z.number().int().min(256).default(32_768),
  /** A container not renewed for this long is removed by its host's reaper. */
  leaseMs: z.number().int().min(10_000).default(600_000),
  /** The shared queue sandboxes are acquired on; each host also serves `<envTaskQueue>-<hostId>`. */
  envTaskQueue: z.string().min(1).default(ENV_TASK_QUEUE),
  /** How long a host-queue step may wait for its host (a restarting worker) before the rollout fails. */
  hostTimeoutMs: z.number().int().min(1_000).default(1_800_000),
  /** A host activity silent this long is presumed dead and retried. */
  heartbeatTimeoutMs: z.number().int().min(500).default(30_000),
  /** Optional per-step judge votes through the env host's judge (spec 10.1 PRM mode). */
  stepJudge: stepJudgeSchema.optional(),
};

export const envRolloutInputSchema = z.strictObject({
  rolloutId: safeId(200),
  env: z.string().min(1),
  taskId: z.string().min(1),
  policy: policySchema,
  ...rolloutSettingsShape,
});

export const agenticTrainingSettingsSchema = z.strictObject({
  /** Where trainStep and publishWeights run (the control worker's queue). */
  taskQueue: z.string().min(1).default(CONTROL_TASK_QUEUE),
  heartbeatTimeoutMs: z.number().int().min(500).default(30_000),
  /** false: roll out, group and store, but train and publish nothing (an evaluation or a dry run). */
  train: z.boolean().default(true),
  loss: lossSettingsSchema.prefault({}),
  optimizer: optimizerSettingsSchema.prefault({}),
});

export const agenticTrainingInputSchema = z
  .strictObject({
    runId: safeId(64),
    env: z.string().min(1),
    /** The task pool, explicitly. */
    taskIds: z.array(z.string().min(1)).min(1).optional(),
    /** Or every task the environment lists (optionally the first `limit`). */
    taskSet: z
      .strictObject({ source: z.literal('all'), limit: z.number().int().min(1).optional() })
      .optional(),
    /** Tasks per training step, taken in turn from the pool (default: the whole pool every step). */
    tasksPerStep: z.number().int().min(1).optional(),
    /** Rollouts per task: one GRPO group. */
    samplesPerTask: z.number().int().min(1).max(1000).default(4),
    /** Rollouts running at once across the step (the sliding window). */
    rolloutsInFlight: z.number().int().min(1).max(100_000).default(64),
    /** Rollouts per batch child; whole groups stay in one batch. At most 1,000 children per parent. */
    rolloutsPerBatch: z.number().int().min(1).max(1000).default(250),
    /** A FAILED rollout is run again with a fresh sandbox this many times; then its group is dropped. */
    maxRetriesPerRollout: z.number().int().min(0).max(20).default(1),
    /** A rollout running longer than this fails (and is retried) so a step never stalls. */
    rolloutTimeoutMs: z.number().int().min(1_000).default(3_600_000),
    /**
     * Each rollout as its own workflow (`rollout-<id>`: its own history to read) or as its episode activities
     * inside its batch workflow (fewer history events and workflow tasks per rollout: the faster fan-out).
     */
    rolloutsAs: z.enum(['workflows', 'activities']).default('activities'),
    /** Training steps to run; the workflow continues-as-new after each. */
    steps: z.number().int().min(1).default(1),
    advantage: z.enum(['grpo', 'step_wise']).default('grpo'),
    policy: policySchema,
    ...rolloutSettingsShape,
    training: agenticTrainingSettingsSchema.prefault({}),
    initialPolicyVersion: z.number().int().min(0).default(0),
    carried: z.unknown().optional(),
  })
  .superRefine((input, ctx) => {
    if ((input.taskIds === undefined) === (input.taskSet === undefined))
      ctx.addIssue({ code: 'custom', path: ['taskIds'], message: 'give exactly one of taskIds and taskSet' });
    if (input.policy.mode === 'chat')
      ctx.addIssue({
        code: 'custom',
        path: ['policy', 'mode'],
        message: `a chat policy (a plain OpenAI-compatible endpoint) returns text, not the token ids and log-probs training needs: it can be evaluated (rollout), not trained; engines that can train: ${ENGINE_KINDS.join(', ')}`,
      });
    if (input.samplesPerTask > input.rolloutsPerBatch)
      ctx.addIssue({
        code: 'custom',
        path: ['samplesPerTask'],
        message: 'a group (samplesPerTask) must fit in one batch (rolloutsPerBatch)',
      });
  });

export type EnvRolloutSettings = z.output<typeof envRolloutInputSchema>;
export type AgenticTrainingSettings = z.output<typeof agenticTrainingInputSchema>;
export type PolicySettings = z.output<typeof policySchema>;
export type StepJudgeSettings = z.output<typeof stepJudgeSchema>;
