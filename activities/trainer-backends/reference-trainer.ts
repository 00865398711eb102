import { z } from 'zod';
import { EngineHttp } from '../../engines/engine-http.js';
import type {
  LossConfig,
  OptimizerConfig,
  SampleRepliesRequest,
  TrainerBackend,
  TrainerSample,
  TrainStepMetrics,
} from '../trainer-backend.js';
import { asTrainerRefusal } from '../trainer-refusal.js';
import { type TrainStepPartBody, trainStepParts } from './train-step-parts.js';
import { trainStepRequest } from './train-step-request.js';

/** What `/train_step_part` answers until the step's last part has arrived. */
const pendingPartsSchema = z.object({ pending: z.literal(true), missing: z.array(z.number().int().min(0)) });
/** `/sample`'s answer: replies per conversation. */
const repliesSchema = z.object({ replies: z.array(z.array(z.string())) });
/** `/trainer_info`'s request body limit; a trainer that does not announce one gets every step whole. */
const bodyLimitSchema = z.object({ max_body_bytes: z.number().int().positive().optional() });

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
      const limit = await this.requestBodyLimit();
      const parts = limit === undefined ? [] : trainStepParts(body, limit);
      if (parts.length === 0)
        return (await this.client.json('POST', '/train_step', body)) as TrainStepMetrics;
      return await this.trainInParts(stepId, parts);
    } catch (error) {
      throw asTrainerRefusal(error);
    }
  }

  private async requestBodyLimit(): Promise<number | undefined> {
    return bodyLimitSchema.parse(await this.client.json('GET', '/trainer_info')).max_body_bytes;
  }

  /**
   * Sends every part; the engine trains the step when the last one arrives. Parts it no longer holds (it
   * restarted between two parts) are sent again once; still missing, the step fails and is retried whole.
   */
  private async trainInParts(stepId: string, parts: TrainStepPartBody[]): Promise<TrainStepMetrics> {
    let answer: unknown;
    for (const part of parts) answer = await this.client.json('POST', '/train_step_part', part);
    for (let round = 0; round < 2; round++) {
      const pending = pendingPartsSchema.safeParse(answer);
      if (!pending.success) return answer as TrainStepMetrics;
      if (round === 1) break;
      for (const index of pending.data.missing) {
        const part = parts[index];
        if (part) answer = await this.client.json('POST', '/train_step_part', part);
      }
    }
    throw new Error(`the trainer did not assemble the ${parts.length} parts of step ${stepId}`);
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

  async sampleReplies(request: SampleRepliesRequest): Promise<string[][]> {
    const answer = await this.client.json('POST', '/sample', {
      conversations: request.conversations,
      max_tokens: request.maxTokens,
      temperature: request.temperature,
      seed: request.seed,
      samples_per_conversation: request.samplesPerConversation,
      source: request.source,
    });
    const { replies } = repliesSchema.parse(answer);
    if (replies.length !== request.conversations.length)
      throw new Error(
        `the trainer answered ${replies.length} reply lists for ${request.conversations.length} conversations`,
      );
    return replies;
  }

  /** The engine's checkpoints are already Hugging Face model folders that SGLang and the engine load. */
  async exportForServing(path: string): Promise<string> {
    await this.saveCheckpoint(path);
    return path;
  }
}
