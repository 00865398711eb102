/**
 * What a trainer container runs for one epoch. Both commands follow the same contract (docs/slime.md): read the
 * batch file, resume from `checkpointIn` (or the base), write `checkpointOut` atomically with the applied step
 * ids and their metrics in `trainer_state/state.json`, exit 0.
 */

import type { LossConfig, OptimizerConfig } from '../trainer-backend.js';
import { type SlimeSettings, slimeArguments, slimeEnvironment } from './slime-arguments.js';

export interface EpochFiles {
  stepId: string;
  baseModel: string;
  batchFile: string;
  /** Samples in the batch file: slime's rollout batch size for this epoch (one optimizer step over all). */
  sampleCount: number;
  checkpointIn: string | null;
  checkpointOut: string;
  loss: LossConfig;
  optimizer: OptimizerConfig;
  /** The temperature every sample of the batch was drawn at (slime's `--rollout-temperature`). */
  temperature: number;
  /** Width of the teacher's top-K rows, for top-K distillation. */
  distillTopk?: number;
  /** Some samples, not all, take their rollout log-probs as π_old (`SlimeSettings.perSampleOldPolicy`). */
  perSampleOldPolicy?: boolean;
  /** Some samples carry images (`SlimeSettings.images`). */
  images?: boolean;
}

export interface EpochCommand {
  cmd: string[];
  env: Record<string, string>;
}

export type EpochCommandBuilder = (epoch: EpochFiles) => EpochCommand;

/** The reference engine's `train-epoch` (CPU, the engine image): the contract's test implementation. */
export function referenceEpochCommand(options: { lora?: { rank: number; alpha: number } } = {}) {
  return (epoch: EpochFiles): EpochCommand => ({
    cmd: [
      'python',
      '-m',
      'openclaw_engine',
      'train-epoch',
      '--base',
      epoch.baseModel,
      '--checkpoint-in',
      epoch.checkpointIn ?? 'none',
      '--batch',
      epoch.batchFile,
      '--checkpoint-out',
      epoch.checkpointOut,
      ...(options.lora
        ? ['--lora-rank', String(options.lora.rank), '--lora-alpha', String(options.lora.alpha)]
        : []),
    ],
    env: {},
  });
}

/**
 * slime's `train_async.py` in a slime image with the project's engine package installed. The entrypoint is the
 * plugin's epoch launcher: it runs slime with these arguments, saving to a temporary folder, then records the
 * step and its metrics in the checkpoint and renames it into place (docs/slime.md).
 */
export function slimeEpochCommand(
  settings: Omit<SlimeSettings, 'hfCheckpoint' | 'load' | 'save' | 'method' | 'loss' | 'optimizer'> = {},
  entrypoint: string[] = ['python3', '-m', 'openclaw_engine.slime_plugin.epoch'],
) {
  return (epoch: EpochFiles): EpochCommand => {
    const full: SlimeSettings = {
      rolloutBatchSize: epoch.sampleCount,
      ...(epoch.distillTopk !== undefined && { distillTopk: epoch.distillTopk }),
      ...(epoch.perSampleOldPolicy && { perSampleOldPolicy: true }),
      ...(epoch.images && { images: true }),
      ...settings,
      rolloutTemperature: epoch.temperature,
      hfCheckpoint: epoch.baseModel,
      load: epoch.checkpointIn,
      save: epoch.checkpointOut,
      method: epoch.loss.method,
      loss: epoch.loss,
      optimizer: epoch.optimizer,
    };
    return {
      cmd: [...entrypoint, '--step-id', epoch.stepId, '--', ...slimeArguments(full)],
      env: slimeEnvironment(full, epoch.batchFile),
    };
  };
}
