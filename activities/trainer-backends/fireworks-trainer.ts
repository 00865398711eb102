import { z } from 'zod';
import { FIREWORKS_NO_ENTROPY, FIREWORKS_NO_KL, FIREWORKS_NO_TOPK } from '../../core/config-schema.js';
import type { LossConfig, OptimizerConfig, TrainerSample, TrainStepMetrics } from '../trainer-backend.js';
import { trainerRefusal } from '../trainer-refusal.js';
import { ReferenceTrainerBackend } from './reference-trainer.js';

/** What an export folder holds: the Fireworks sampler snapshot to hot-load (written by the sidecar, atomically). */
export const FIREWORKS_SAMPLER_FILE = 'fireworks-sampler.json';

const exportSchema = z.object({ path: z.string(), snapshot_name: z.string() });

/**
 * Fireworks AI as the trainer, through the Fireworks sidecar (`python -m openclaw_engine.fireworks_sidecar`),
 * which holds the SDK's training client on a Fireworks trainer job and speaks the reference engine's training
 * contract. Datums are the recorded token ids; the loss is the project's, computed in the sidecar through
 * `forward_backward_custom`. Checkpoints are folders holding `fireworks-checkpoint.json` (the saved state's
 * Fireworks path); an export holds `fireworks-sampler.json` (a sampler snapshot), which the sidecar's
 * `/update_weights_from_disk` hot-loads into the Fireworks deployment (docs/fireworks.md).
 */
export class FireworksTrainerBackend extends ReferenceTrainerBackend {
  override readonly name = 'fireworks';

  override async trainStep(
    stepId: string,
    samples: TrainerSample[],
    loss: LossConfig,
    optimizer: OptimizerConfig,
  ): Promise<TrainStepMetrics> {
    // A reconfigure may set what the configuration check refused: refuse the step, never drop a term.
    if (loss.method === 'topk_distill') throw trainerRefusal(FIREWORKS_NO_TOPK);
    if (loss.klCoef > 0) throw trainerRefusal(FIREWORKS_NO_KL);
    if (loss.entropyCoef !== 0) throw trainerRefusal(FIREWORKS_NO_ENTROPY);
    return super.trainStep(stepId, samples, loss, optimizer);
  }

  /** Saves a sampler snapshot; `path` then holds `fireworks-sampler.json`, which publishing hot-loads. */
  override async exportForServing(path: string): Promise<string> {
    return exportSchema.parse(await this.client.json('POST', '/export_for_serving', { path })).path;
  }
}
