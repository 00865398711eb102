import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/activity';
import { exclusionKey, sampleKey } from '../core/turn-record.js';
import type { Method, SampleExclusion, TrainingSample } from '../core/types.js';
import type { EngineAdapter } from '../engines/engine-adapter.js';
import type { LineageEntry, LossSettings, OptimizerSettings } from '../workflows/training-signals.js';
import { withHeartbeats } from './heartbeats.js';
import type { SampleStore } from './sample-store.js';
import { storeKey } from './sample-store.js';
import type { LossMethod, TrainerBackend, TrainerSample } from './trainer-backend.js';
import { TINKER_SAMPLER_FILE } from './trainer-backends/tinker-trainer.js';
import { TRAINER_LOST_STEP } from './training-errors.js';

export interface TrainingDependencies {
  store: SampleStore;
  trainer: TrainerBackend;
  /** The serving engine that receives each new policy version. */
  serving: EngineAdapter;
  /** Checkpoints go under `<checkpointDir>/<runId>/v<version>`. */
  checkpointDir: string;
}

export interface TrainStepInput {
  runId: string;
  stepId: string;
  sampleIds: string[];
  /**
   * Or the store key of a record whose `sampleIds` lists them (a Track 2 step's manifest), so the input
   * stays small however many samples the step has; `sampleIds` is then empty.
   */
  sampleIdsKey?: string;
  method: Method;
  loss: LossSettings;
  optimizer: OptimizerSettings;
  useRolloutLogprobs: boolean;
  /** The run's last trained step and its checkpoint: a trainer that restarted is brought back to them first. */
  resume: { lastStepId: string | null; lastCheckpoint: string | null };
}

/** Track 1 methods map onto the trainer's loss: binary RL is GRPO with the judge's reward. */
const LOSS_METHOD: Record<Method, LossMethod> = { rl: 'grpo', opd: 'opd', combine: 'combine' };

/**
 * Whether `path` holds a whole published version: a Hugging Face folder, or a Tinker export naming its sampler
 * weights. Both are written atomically, so one that is there is complete.
 */
export function isPublishedVersion(path: string): boolean {
  return existsSync(join(path, 'config.json')) || existsSync(join(path, TINKER_SAMPLER_FILE));
}

/** A step's sample ids: inline, or read from the record at `sampleIdsKey`. */
async function sampleIdsOf(store: SampleStore, input: TrainStepInput): Promise<string[]> {
  if (input.sampleIdsKey === undefined) return input.sampleIds;
  const record = await store.get<{ sampleIds?: unknown }>(input.sampleIdsKey);
  if (!Array.isArray(record?.sampleIds))
    throw ApplicationFailure.nonRetryable(
      `no sample ids at ${input.sampleIdsKey} in the store`,
      'MissingSample',
    );
  return record.sampleIds.map(String);
}

export function createTrainingActivities(deps: TrainingDependencies) {
  const { store, trainer } = deps;

  return {
    async trainStep(input: TrainStepInput): Promise<Record<string, number>> {
      return withHeartbeats(input.stepId, async () => {
        const { lastStepId, lastCheckpoint } = input.resume;
        // A trainer process that restarted lost its state: resume it from the run's last checkpoint.
        if (lastStepId && lastCheckpoint && !(await trainer.hasApplied(input.stepId))) {
          if (!(await trainer.hasApplied(lastStepId))) await trainer.loadCheckpoint(lastCheckpoint);
        }
        const samples: TrainerSample[] = [];
        for (const sampleId of await sampleIdsOf(store, input)) {
          const sample = await store.get<TrainingSample>(sampleKey(sampleId));
          if (!sample)
            throw ApplicationFailure.nonRetryable(`sample ${sampleId} is not in the store`, 'MissingSample');
          samples.push({
            tokens: sample.tokens,
            responseLength: sample.responseLength,
            lossMask: sample.lossMask,
            rolloutLogProbs: sample.rolloutLogProbs,
            reward: sample.reward,
            teacherLogProbs:
              sample.teacherLogProbs ?? (input.method === 'rl' ? undefined : sample.rolloutLogProbs),
            teacherTopkLogProbs: sample.teacherTopkLogProbs,
            teacherTopkIndices: sample.teacherTopkIndices,
          });
        }
        const metrics = await trainer.trainStep(
          input.stepId,
          samples,
          {
            method: LOSS_METHOD[input.method],
            epsClip: input.loss.epsClip,
            epsClipHigh: input.loss.epsClipHigh,
            klCoef: input.loss.klCoef,
            klType: input.loss.klType === 'k3' ? 'low_var_kl' : input.loss.klType,
            entropyCoef: input.loss.entropyCoef,
            wRl: input.loss.wRl,
            wOpd: input.loss.wOpd,
            useRolloutLogprobs: input.useRolloutLogprobs,
          },
          {
            lr: input.optimizer.learningRate,
            weightDecay: input.optimizer.weightDecay,
            betas: input.optimizer.betas,
          },
        );
        const numeric: Record<string, number> = {};
        for (const [key, value] of Object.entries(metrics))
          if (typeof value === 'number') numeric[key] = value;
        return numeric;
      });
    },

    /** Saves the trained weights as version `version` and loads them into the serving engine. Idempotent. */
    async publishWeights(input: { runId: string; stepId: string; version: number }): Promise<string> {
      return withHeartbeats(`publish v${input.version}`, async () => {
        const path = join(deps.checkpointDir, input.runId, `v${input.version}`);
        if (await trainer.hasApplied(input.stepId)) {
          await trainer.exportForServing(path);
        } else if (!isPublishedVersion(path)) {
          // The trainer restarted after the step and before its checkpoint: publishing now would ship the
          // weights it restarted with. The workflow trains the step again (trainAndPublish).
          throw ApplicationFailure.nonRetryable(
            `the trainer no longer holds step ${input.stepId} and v${input.version} was never saved`,
            TRAINER_LOST_STEP,
          );
        }
        // Checkpoints are written atomically, so one that exists is whole: (re)load it into serving.
        await deps.serving.publishWeights({ path, version: String(input.version) });
        return path;
      });
    },

    async recordLineage(input: { runId: string; entry: LineageEntry }): Promise<void> {
      await store.put(storeKey('lineage', input.runId, `v${input.entry.version}`), input.entry);
    },

    async recordStaleExclusions(input: {
      sampleIds: string[];
      policyVersion: number;
      maxPolicyLag: number;
    }): Promise<void> {
      // A dropped sample moves to the exclusions (with its data, for audit), so a turn is never both.
      for (const sampleId of input.sampleIds) {
        const sample = await store.get<TrainingSample>(sampleKey(sampleId));
        if (sample === undefined) continue; // moved by an earlier attempt
        const exclusion: SampleExclusion & { sample: TrainingSample } = {
          sampleId,
          reason: 'stale-policy',
          detail: `more than ${input.maxPolicyLag} versions behind policy v${input.policyVersion}`,
          sample,
        };
        await store.put(exclusionKey(sampleId), exclusion);
        await store.delete(sampleKey(sampleId));
      }
    },
  };
}

export type TrainingActivities = ReturnType<typeof createTrainingActivities>;
