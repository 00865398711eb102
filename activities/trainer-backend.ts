/**
 * What the training workflow needs from a trainer, whatever runs it: the reference engine (HTTP), slime in a
 * container on a GPU host, or Tinker's cloud. Every implementation lives in trainer-backends/ in its own file.
 */

import type { StoredImage } from '../core/image-parts.js';
import {
  type OptimizerSettings,
  optimizerSettingsSchema,
  type TrainerLoss,
  trainerLossSchema,
} from '../core/loss-settings.js';
import type { TrainingSample } from '../core/types.js';

/** The training fields of a stored sample (core/types.ts), which is what every backend trains on. */
export type TrainerSample = Pick<
  TrainingSample,
  | 'tokens'
  | 'responseLength'
  | 'lossMask'
  | 'rolloutLogProbs'
  | 'reward'
  | 'teacherLogProbs'
  | 'teacherTopkLogProbs'
  | 'teacherTopkIndices'
  | 'temperature'
> & {
  /** This sample's π_old is its rollout log-probs (it is more than `maxPolicyLag` versions old). */
  useRolloutLogprobs?: boolean;
  /** Group training: this sample's token losses count this many times (its tenant's weight; absent: 1). */
  weight?: number;
  /** The prompt's images in prompt order, their bytes read from the store when the step is sent. */
  images?: StoredImage[];
};

/**
 * Group training's loss weights: what a trainer that cannot weigh samples refuses, naming the option and the
 * weighted samples by position (so the run excludes only them, trainer-refusal.ts `refusedSamplesNamed`).
 */
export const NO_SAMPLE_WEIGHTS = (trainer: string, positions: readonly number[]) =>
  `the ${trainer} trainer cannot weigh samples: remove training.tenantWeights (OPENCLAW_TENANT_WEIGHTS) or set every weight to 1, or use the reference trainer (weighted: ${positions.map((i) => `samples[${i}]`).join(', ')})`;

/** The positions of the samples weighted other than 1. */
export function weightedSamples(samples: readonly TrainerSample[]): number[] {
  return samples.flatMap((s, i) => (s.weight !== undefined && s.weight !== 1 ? [i] : []));
}

/** A step's loss: the run's loss settings (core/loss-settings.ts) with its method and π_old's source. */
export type LossConfig = TrainerLoss;

/** The run's optimizer settings; a wire format that names a field otherwise maps it (train-step-request.ts). */
export type OptimizerConfig = OptimizerSettings;

export interface TrainStepMetrics {
  loss: number;
  pg_loss: number;
  pg_clipfrac: number;
  ppo_kl: number;
  kl_loss: number;
  entropy: number;
  grad_norm: number;
  tokens: number;
  /** True when the backend had already trained this step id and returned its recorded metrics. */
  duplicate?: boolean;
  [metric: string]: number | boolean | string | undefined;
}

/** What the publish gate asks a trainer for (docs/evaluation.md): replies to conversations from some weights. */
export interface SampleRepliesRequest {
  conversations: { role: string; content: unknown; [field: string]: unknown }[][];
  maxTokens: number;
  temperature: number;
  seed: number;
  samplesPerConversation: number;
  /** The weights after the last step, the base model, or a checkpoint folder loaded into a scratch copy. */
  source: 'current' | 'base' | { checkpoint: string };
}

export interface TrainerBackend {
  readonly name: string;
  /** Idempotent by `stepId`: a repeated id returns the recorded metrics and does not train again. */
  trainStep(
    stepId: string,
    samples: TrainerSample[],
    loss: LossConfig,
    optimizer: OptimizerConfig,
  ): Promise<TrainStepMetrics>;
  /** Writes the full training state (weights, optimizer, step ids seen) to `path`. */
  saveCheckpoint(path: string): Promise<void>;
  /** Resumes training state from a checkpoint written by `saveCheckpoint`. */
  loadCheckpoint(path: string): Promise<void>;
  /** Returns a model folder the serving engine can load with `update_weights_from_disk`. */
  exportForServing(path: string): Promise<string>;
  /** Whether the trainer's current state already includes `stepId` (false after a restart from the base). */
  hasApplied(stepId: string): Promise<boolean>;
  /** Back to the base model, no optimizer state, no step ids: a run that starts anew trains from there. */
  resetToBase(): Promise<void>;
  /** Whether the trainer has trained (or loaded) anything since its base. */
  hasTrained(): Promise<boolean>;
  /**
   * Replies per conversation (`samplesPerConversation` each), deterministic for a seed, with the chat template
   * applied as serving applies it. Only trainers that can (the reference one) have it: the publish gate needs it.
   */
  sampleReplies?(request: SampleRepliesRequest): Promise<string[][]>;
}

export const defaultLossConfig: LossConfig = trainerLossSchema.parse({ method: 'combine' });

export const defaultOptimizerConfig: OptimizerConfig = optimizerSettingsSchema.parse({});
