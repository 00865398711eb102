import { EngineHttp } from '../../engines/engine-http.js';
import type {
  LossConfig,
  OptimizerConfig,
  TrainerBackend,
  TrainerSample,
  TrainStepMetrics,
} from '../trainer-backend.js';
import { asTrainerRefusal } from '../trainer-refusal.js';
import { trainStepRequest } from './train-step-request.js';

/**
 * The reference engine started with `--trainer`: training over JSON/HTTP on the engine's own port
 * (`/train_step`, `/save_checkpoint`, `/load_checkpoint`, `/trainer_info`; engine/TRAINING.md). Other trainers
 * that speak the same contract (the Tinker sidecar) extend it.
 */
export class ReferenceTrainerBackend implements TrainerBackend {
  readonly name: string = 'reference';
  protected readonly client: EngineHttp;

  /** `headers`: sent with every call (the engine's bearer token, security/engine-token.ts). */
  constructor(baseUrl: string, headers: Record<string, string> = {}, trainTimeoutMs = 30 * 60_000) {
    this.client = new EngineHttp(baseUrl, { timeoutMs: trainTimeoutMs, headers });
  }

  async trainStep(
    stepId: string,
    samples: TrainerSample[],
    loss: LossConfig,
    optimizer: OptimizerConfig,
  ): Promise<TrainStepMetrics> {
    const body = trainStepRequest(stepId, samples, loss, optimizer);
    try {
      return (await this.client.json('POST', '/train_step', body)) as TrainStepMetrics;
    } catch (error) {
      throw asTrainerRefusal(error);
    }
  }

  async saveCheckpoint(path: string): Promise<void> {
    await this.client.json('POST', '/save_checkpoint', { path });
  }

  async loadCheckpoint(path: string): Promise<void> {
    await this.client.json('POST', '/load_checkpoint', { path });
  }

  async hasApplied(stepId: string): Promise<boolean> {
    return (await this.stepIds()).includes(stepId);
  }

  async hasTrained(): Promise<boolean> {
    return (await this.stepIds()).length > 0;
  }

  async resetToBase(): Promise<void> {
    await this.client.json('POST', '/reset_to_base', {});
  }

  private async stepIds(): Promise<string[]> {
    const info = (await this.client.json('GET', '/trainer_info')) as { step_ids?: string[] };
    return info.step_ids ?? [];
  }

  /** The engine's checkpoints are already Hugging Face model folders that SGLang and the engine load. */
  async exportForServing(path: string): Promise<string> {
    await this.saveCheckpoint(path);
    return path;
  }
}
