// The project's reference engine (engine/): it serves the SGLang subset the project uses, in SGLang's
// spelling, so its adapter is SGLang's with what differs: it names the weight version on every answer,
// streams included; it always parses tool calls and reasoning; it has no LoRA adapters to load (its trainer
// exports whole model folders); it scores a teacher prefill at the temperature asked for, unless it was
// started with `--return-original-logprob` (then every log-prob is at temperature 1, and it says so).

import type { EngineFeatures, EngineKind, LoraAdapterRequest } from './engine-adapter.js';
import { EngineFeatureError } from './engine-adapter.js';
import { SglangAdapter } from './sglang-adapter.js';

export class ReferenceAdapter extends SglangAdapter {
  override readonly kind: EngineKind = 'reference';
  override readonly features: EngineFeatures = {
    weightVersionInResponse: { stream: true, nonStream: true },
    loraAdapters: false,
    prefillTemperature: true,
    chatFromTokenIds: true,
  };

  override async servingProblems(): Promise<string[]> {
    return [];
  }

  /** Refuses when the engine reports every log-prob at temperature 1 (`/model_info` `logprob_semantics`). */
  protected override async checkPrefillTemperature(temperature: number, signal?: AbortSignal): Promise<void> {
    const info = await this.rawModelInfo(signal);
    if (info.logprob_semantics === 'original')
      throw new EngineFeatureError(
        `the reference engine at ${this.url} runs with --return-original-logprob, so it scores at temperature 1 ` +
          `only (asked for ${temperature}); start the teacher without it`,
      );
  }

  override async loadLoraAdapter(_request: LoraAdapterRequest): Promise<void> {
    throw new EngineFeatureError(
      'the reference engine loads no LoRA adapters: publish the merged model folder (publishWeights)',
    );
  }
}
