import { z } from 'zod';
import { PolicyEngineClient } from '../policy-engine-client.js';
import type {
  LossConfig,
  OptimizerConfig,
  TrainerBackend,
  TrainerSample,
  TrainStepMetrics,
} from '../trainer-backend.js';
import { trainStepRequest } from './train-step-request.js';

const trainerInfoSchema = z.object({ step_ids: z.array(z.string()) });
const exportSchema = z.object({ path: z.string(), model_path: z.string().nullable() });

/**
 * Tinker's cloud as the trainer, through the Tinker sidecar (`python -m openclaw_engine.tinker_sidecar`),
 * which holds the SDK's LoRA training client. Checkpoints are folders holding `tinker-checkpoint.json` (the
 * `tinker://` state path); an export holds `tinker-sampler.json` (the sampler weights' `tinker://` path),
 * which a Tinker sampling client serves, not the reference engine or SGLang.
 */
export class TinkerTrainerBackend implements TrainerBackend {
  readonly name = 'tinker';
  private readonly client: PolicyEngineClient;

  constructor(sidecarUrl: string, trainTimeoutMs = 30 * 60_000) {
    this.client = new PolicyEngineClient(sidecarUrl, trainTimeoutMs);
  }

  async trainStep(
    stepId: string,
    samples: TrainerSample[],
    loss: LossConfig,
    optimizer: OptimizerConfig,
  ): Promise<TrainStepMetrics> {
    if (loss.method === 'topk_distill') throw new Error('Tinker has no top-K distillation loss');
    const body = trainStepRequest(stepId, samples, loss, optimizer);
    return (await this.client.request('POST', '/train_step', body)) as TrainStepMetrics;
  }

  async saveCheckpoint(path: string): Promise<void> {
    await this.client.request('POST', '/save_checkpoint', { path });
  }

  async loadCheckpoint(path: string): Promise<void> {
    await this.client.request('POST', '/load_checkpoint', { path });
  }

  async hasApplied(stepId: string): Promise<boolean> {
    const info = trainerInfoSchema.parse(await this.client.request('GET', '/trainer_info'));
    return info.step_ids.includes(stepId);
  }

  /** Publishes the weights as Tinker sampler weights; `path` then holds `tinker-sampler.json`. */
  async exportForServing(path: string): Promise<string> {
    return exportSchema.parse(await this.client.request('POST', '/export_for_serving', { path })).path;
  }
}
