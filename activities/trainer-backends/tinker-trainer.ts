import { z } from 'zod';
import { TINKER_NO_KL } from '../../core/config-schema.js';
import {
  type LossConfig,
  NO_SAMPLE_WEIGHTS,
  type OptimizerConfig,
  type TrainerSample,
  type TrainStepMetrics,
  weightedSamples,
} from '../trainer-backend.js';
import { trainerRefusal } from '../trainer-refusal.js';
import { ReferenceTrainerBackend } from './reference-trainer.js';

/** What an export folder holds: the sampler weights' `tinker://` path (written by the sidecar, atomically). */
export const TINKER_SAMPLER_FILE = 'tinker-sampler.json';

const exportSchema = z.object({ path: z.string(), model_path: z.string().nullable() });

/**
 * Tinker's cloud as the trainer, through the Tinker sidecar (`python -m openclaw_engine.tinker_sidecar`),
 * which holds the SDK's LoRA training client and speaks the reference engine's training contract. Checkpoints
 * are folders holding `tinker-checkpoint.json` (the `tinker://` state path); an export holds
 * `tinker-sampler.json` (the sampler weights' `tinker://` path), which a Tinker sampling client serves, not the
 * reference engine or SGLang.
 */
export class TinkerTrainerBackend extends ReferenceTrainerBackend {
  override readonly name = 'tinker';

  override async trainStep(
    stepId: string,
    samples: TrainerSample[],
    loss: LossConfig,
    optimizer: OptimizerConfig,
  ): Promise<TrainStepMetrics> {
    if (loss.method === 'topk_distill')
      throw trainerRefusal(
        'Tinker has no top-K distillation loss: train opd with distillTopK 0, or use slime',
      );
    // A reconfigure may set a KL coefficient after the configuration was checked: refuse, never drop it.
    if (loss.klCoef > 0) throw trainerRefusal(TINKER_NO_KL);
    const weighted = weightedSamples(samples);
    if (weighted.length > 0) throw trainerRefusal(NO_SAMPLE_WEIGHTS('Tinker', weighted));
    return super.trainStep(stepId, samples, loss, optimizer);
  }

  /** Publishes the weights as Tinker sampler weights; `path` then holds `tinker-sampler.json`. */
  override async exportForServing(path: string): Promise<string> {
    return exportSchema.parse(await this.client.json('POST', '/export_for_serving', { path })).path;
  }
}
