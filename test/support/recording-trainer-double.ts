import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type {
  LossConfig,
  OptimizerConfig,
  TrainerBackend,
  TrainerSample,
  TrainStepMetrics,
} from '../../activities/trainer-backend.js';
import { trainStepRequest } from '../../activities/trainer-backends/train-step-request.js';
import { trainerRefusal } from '../../activities/trainer-refusal.js';

/** One trainStep call as the double received it, with the request body the reference engine would get. */
export interface RecordedStep {
  stepId: string;
  samples: TrainerSample[];
  loss: LossConfig;
  body: ReturnType<typeof trainStepRequest>;
}

/**
 * TEST DOUBLE of a TrainerBackend, for fast workflow-logic tests: it trains nothing, records every step (with
 * the `/train_step` body the real reference trainer would receive, built by the same `trainStepRequest`), keeps
 * step ids the way the reference trainer does (a repeated id is a duplicate; `resetToBase` forgets them), and
 * writes exports as a minimal Hugging Face folder (`config.json`) so publishing finds a whole version. A
 * sample whose reward is beyond 1e20 makes it refuse the step as the reference trainer does (its gradient
 * overflows: 422 "non-finite gradient norm", a non-retryable `TrainerRefused`; training-controls.test.ts
 * checks that on the real engine).
 */
export class RecordingTrainerDouble implements TrainerBackend {
  readonly name = 'recording-double';
  readonly steps: RecordedStep[] = [];
  resets = 0;
  private applied = new Set<string>();

  async trainStep(
    stepId: string,
    samples: TrainerSample[],
    loss: LossConfig,
    optimizer: OptimizerConfig,
  ): Promise<TrainStepMetrics> {
    const body = trainStepRequest(stepId, samples, loss, optimizer);
    this.steps.push({ stepId, samples, loss, body });
    if (samples.some((s) => !(Math.abs(s.reward) < 1e20)))
      throw trainerRefusal(`non-finite gradient norm (nan); step not applied`);
    const duplicate = this.applied.has(stepId);
    this.applied.add(stepId);
    return {
      loss: 0,
      pg_loss: 0,
      pg_clipfrac: 0,
      ppo_kl: 0,
      kl_loss: 0,
      entropy: 0,
      grad_norm: 1,
      tokens: samples.reduce((n, s) => n + s.responseLength, 0),
      duplicate,
    };
  }

  async saveCheckpoint(path: string): Promise<void> {
    await mkdir(path, { recursive: true });
    await writeFile(join(path, 'config.json'), JSON.stringify({ steps: [...this.applied] }));
  }

  async loadCheckpoint(): Promise<void> {}

  async exportForServing(path: string): Promise<string> {
    await this.saveCheckpoint(path);
    return path;
  }

  async hasApplied(stepId: string): Promise<boolean> {
    return this.applied.has(stepId);
  }

  async hasTrained(): Promise<boolean> {
    return this.applied.size > 0;
  }

  async resetToBase(): Promise<void> {
    this.resets++;
    this.applied.clear();
  }
}
