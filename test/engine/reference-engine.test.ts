import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultLossConfig, defaultOptimizerConfig } from '../../activities/trainer-backend.js';
import { ReferenceTrainerBackend } from '../../activities/trainer-backends/reference-trainer.js';
import {
  type EngineProcess,
  makeTinyModel,
  startReferenceEngine,
} from '../../engines/reference-engine-process.js';
import { type EngineCalls, engineCalls } from '../support/engine-calls.js';

// The TypeScript side of the engine contract, against a real engine process: what the workflows will rely on.
describe('reference engine from TypeScript', () => {
  let dir: string;
  let engine: EngineProcess;
  let client: EngineCalls;
  let trainer: ReferenceTrainerBackend;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'openclaw-engine-'));
    const model = await makeTinyModel(join(dir, 'model'));
    engine = await startReferenceEngine({ model, trainer: true });
    client = engineCalls(engine.url);
    trainer = new ReferenceTrainerBackend(engine.url);
  }, 180_000);

  afterAll(async () => {
    await engine?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** Log-probs the served policy gives the last `responseLength` tokens of `tokens` (a pure prefill). */
  async function responseLogprobs(tokens: number[], responseLength: number): Promise<number[]> {
    const prefill = await client.generate({
      input_ids: tokens,
      sampling_params: { max_new_tokens: 0 },
      return_logprob: true,
      logprob_start_len: tokens.length - responseLength,
    });
    return (prefill.meta_info.input_token_logprobs ?? []).map((entry) => entry[0] ?? Number.NaN);
  }

  it('samples with exact log-probs, trains a step, publishes it, and serves the new policy', async () => {
    const prompt = (
      await client.generate({ text: 'The weather today is', sampling_params: { max_new_tokens: 0 } })
    ).meta_info.prompt_tokens;
    expect(prompt).toBeGreaterThan(0);

    const sampled = await client.generate({
      text: 'The weather today is',
      sampling_params: { temperature: 1, max_new_tokens: 12, seed: 3, ignore_eos: true },
      return_logprob: true,
    });
    const responseIds = sampled.output_ids;
    const rolloutLogprobs = (sampled.meta_info.output_token_logprobs ?? []).map(
      (entry) => entry[0] ?? Number.NaN,
    );
    expect(responseIds).toHaveLength(12);
    expect(rolloutLogprobs).toHaveLength(12);

    const promptIds = (await client.request('POST', '/tokenize', { text: 'The weather today is' })) as {
      tokens: number[];
    };
    const tokens = [...promptIds.tokens, ...responseIds];
    const before = await responseLogprobs(tokens, responseIds.length);
    before.forEach((lp, i) => {
      expect(lp).toBeCloseTo(rolloutLogprobs[i] ?? Number.NaN, 4);
    });

    const sample = {
      tokens,
      responseLength: responseIds.length,
      lossMask: responseIds.map(() => 1),
      rolloutLogProbs: rolloutLogprobs,
      reward: 1,
    };
    const loss = { ...defaultLossConfig, method: 'grpo' as const };
    const optimizer = { ...defaultOptimizerConfig, learningRate: 1e-3 };
    const metrics = await trainer.trainStep('ts-step-1', [sample], loss, optimizer);
    expect(metrics.tokens).toBe(12);
    expect(metrics.duplicate ?? false).toBe(false);
    const again = await trainer.trainStep('ts-step-1', [sample], loss, optimizer);
    expect(again.duplicate).toBe(true);
    expect(again.loss).toBe(metrics.loss);

    const checkpoint = await trainer.exportForServing(join(dir, 'ckpt-1'));
    await client.updateWeightsFromDisk(checkpoint, '1');
    expect(String((await client.modelInfo()).weight_version)).toBe('1');

    const after = await responseLogprobs(tokens, responseIds.length);
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    expect(sum(after)).toBeGreaterThan(sum(before));
  }, 120_000);
});
